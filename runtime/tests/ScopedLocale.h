//===- ScopedLocale.h - a decimal-comma LC_NUMERIC for one test -------------===//
//
// Sets LC_NUMERIC to a locale whose decimal separator is ',' (de_DE, fr_FR,
// ... whichever is installed) for the life of the object and restores the
// previous one. ok() is false when none is installed (the caller skips
// what needs it); the C library's strtod would then read "1,5" as 1.5 and
// stop at the '.' of "1.5", which is what Parse.h must never do.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_SCOPEDLOCALE_H
#define TRC_RUNTIME_TESTS_SCOPEDLOCALE_H

#include <clocale>
#include <cstring>
#include <string>

namespace trc::rt::test {

class ScopedDecimalCommaLocale {
public:
  ScopedDecimalCommaLocale() {
    const char *current = std::setlocale(LC_NUMERIC, nullptr);
    previous_ = current ? current : "C";
    for (const char *name : {"de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8",
                             "fr_FR.utf8", "nl_NL.UTF-8"}) {
      if (std::setlocale(LC_NUMERIC, name) &&
          std::strcmp(std::localeconv()->decimal_point, ",") == 0) {
        name_ = name;
        return;
      }
    }
    std::setlocale(LC_NUMERIC, previous_.c_str());
  }
  ~ScopedDecimalCommaLocale() { std::setlocale(LC_NUMERIC, previous_.c_str()); }
  ScopedDecimalCommaLocale(const ScopedDecimalCommaLocale &) = delete;
  ScopedDecimalCommaLocale &operator=(const ScopedDecimalCommaLocale &) = delete;

  bool ok() const { return !name_.empty(); }
  const std::string &name() const { return name_; }

private:
  std::string previous_, name_;
};

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_SCOPEDLOCALE_H
