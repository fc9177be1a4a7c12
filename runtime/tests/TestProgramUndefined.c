/*===- TestProgramUndefined.c - a program with an unresolvable import ------===//
 *
 * Calls a trc_rt_* function no runtime provides, so dlopen(RTLD_NOW) of it
 * must fail and the runtime must report it instead of crashing later.
 *
 *===----------------------------------------------------------------------===*/
void trc_rt_does_not_exist(void *p);

void trc_entry(void **slots, void *arena) {
  (void)arena;
  trc_rt_does_not_exist(slots[0]);
}
