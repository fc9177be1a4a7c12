//===- CommunicatorCheck.cpp - a multi-process test program -----------------===//
//
// trc-communicator-check MODE [BACKEND]: run by MpiLaunchTest.cpp under
// mpirun (or alone), one process per rank.
//   numerics   every collective's results for f32 f64 i32 i64 and each
//              ReduceOp (out of place and in place, counts 0 to 3M),
//              allGather/broadcast/send/recv of every dtype (f16/bf16 as
//              bits), a send/recv ring, subgroups (split by parity, by
//              reversed key, without rank 0, subgroup lists, a split of a
//              split), the argument errors, and non-blocking
//              point-to-point (checkP2P: 8 MiB isends to both ring
//              neighbours before any receive, receives posted out of tag
//              order, isend + blocking recv, waitAll, test, same-tag
//              order, messages to self, a count mismatch, a parity
//              group's ring, the argument errors); prints
//              "rank R: N checks passed (BACKEND, size S)" or "error: ..."
//              lines and exits 1
//   single     as numerics, after checking that a plain process gets the
//              single-process communicator
//   kill       rank 1 kills itself (SIGKILL) before an allReduce the others
//              enter; they must not return from it
//   hang       rank 1 sleeps 60 s instead of joining an allReduce
//   hang-recv  rank 0 receives from rank 1, which sleeps 60 s
//   hang-irecv rank 0 waits for an irecv (tag 4) from rank 1, which sleeps
//   kill-p2p   rank 1 kills itself; rank 0 is in a blocking recv from it,
//              the others have an 8 MiB isend to it in flight and wait
//              for an irecv (tag 3) from it
// BACKEND is createCommunicator's name (default auto).
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Communicator.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/support/HalfFloat.h"

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using namespace trc::rt;

namespace {

int gRank = 0;
int gChecks = 0, gFailures = 0;

void fail(const std::string &what) {
  ++gFailures;
  if (gFailures <= 30)
    std::fprintf(stderr, "error: rank %d: %s\n", gRank, what.c_str());
}

void expect(bool ok, const std::string &what) {
  ++gChecks;
  if (!ok)
    fail(what);
}

void expectOk(const Status &s, const std::string &what) {
  ++gChecks;
  if (!s)
    fail(what + ": " + s.message());
}

// The group of a split or subgroup (null after a failure, which is
// counted, or where this rank joins none).
std::unique_ptr<Communicator> expectGroup(StatusOr<std::unique_ptr<Communicator>> r,
                                          const std::string &what) {
  expectOk(r.status(), what);
  return r.ok() ? *std::move(r) : nullptr;
}

void expectError(const Status &s, const std::string &part,
                 const std::string &what) {
  ++gChecks;
  if (s)
    fail(what + ": succeeded, expected an error");
  else if (s.message().find(part) == std::string::npos)
    fail(what + ": error '" + s.message() + "' lacks '" + part + "'");
}

template <typename T> struct Type;
template <> struct Type<float> { static constexpr DType d = DType::F32; };
template <> struct Type<double> { static constexpr DType d = DType::F64; };
template <> struct Type<int32_t> { static constexpr DType d = DType::I32; };
template <> struct Type<int64_t> { static constexpr DType d = DType::I64; };

// Rank r's element i: small integers (exact in every type; products of 4
// ranks stay below 5^4).
template <typename T> T value(int r, size_t i) {
  return T((r * 7 + int(i % 1009) * 3) % 5 + 1);
}

template <typename T> T reduce(ReduceOp op, int n, size_t i) {
  T acc = value<T>(0, i);
  for (int r = 1; r < n; ++r) {
    T v = value<T>(r, i);
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      acc = T(acc + v);
      break;
    case ReduceOp::Prod:
      acc = T(acc * v);
      break;
    case ReduceOp::Min:
      acc = std::min(acc, v);
      break;
    case ReduceOp::Max:
      acc = std::max(acc, v);
      break;
    }
  }
  if (op == ReduceOp::Avg)
    acc = T(acc / T(n));
  return acc;
}

template <typename T>
std::string where(const char *call, ReduceOp op, size_t count,
                  const char *how = "") {
  return std::string(call) + " " + dtypeName(Type<T>::d) + " " +
         reduceOpName(op) + " count " + std::to_string(count) + how;
}

template <typename T> void checkReductions(Communicator &c) {
  int n = c.size(), me = c.rank();
  DType dt = Type<T>::d;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min,
                      ReduceOp::Max, ReduceOp::Avg}) {
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000)}) {
      std::vector<T> send(count), recv(count, T(-1));
      for (size_t i = 0; i < count; ++i)
        send[i] = value<T>(me, i);
      expectOk(c.allReduce(send.data(), recv.data(), count, dt, op),
               where<T>("allReduce", op, count));
      bool same = true;
      for (size_t i = 0; i < count; ++i)
        same &= recv[i] == reduce<T>(op, n, i);
      expect(same, where<T>("allReduce", op, count) + ": wrong values");
      // In place.
      expectOk(c.allReduce(send.data(), send.data(), count, dt, op),
               where<T>("allReduce", op, count, " in place"));
      expect(send == recv,
             where<T>("allReduce", op, count, " in place") + ": wrong values");
      // reduceScatter: send holds n * count.
      std::vector<T> all(count * size_t(n)), mine(count, T(-1));
      for (size_t j = 0; j < all.size(); ++j)
        all[j] = value<T>(me, j);
      expectOk(c.reduceScatter(all.data(), mine.data(), count, dt, op),
               where<T>("reduceScatter", op, count));
      same = true;
      for (size_t i = 0; i < count; ++i)
        same &= mine[i] == reduce<T>(op, n, size_t(me) * count + i);
      expect(same, where<T>("reduceScatter", op, count) + ": wrong values");
    }
  }
  // allGather, out of place and in place.
  for (size_t count : {size_t(0), size_t(1), size_t(33)}) {
    std::vector<T> send(count), recv(count * size_t(n), T(-1));
    for (size_t i = 0; i < count; ++i)
      send[i] = value<T>(me, i);
    expectOk(c.allGather(send.data(), recv.data(), count, dt),
             where<T>("allGather", ReduceOp::Sum, count));
    bool same = true;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        same &= recv[size_t(r) * count + i] == value<T>(r, i);
    expect(same, where<T>("allGather", ReduceOp::Sum, count) + ": wrong");
    std::vector<T> inPlace(count * size_t(n), T(-1));
    std::copy(send.begin(), send.end(), inPlace.begin() + long(me * count));
    expectOk(c.allGather(inPlace.data() + me * count, inPlace.data(), count,
                         dt),
             where<T>("allGather", ReduceOp::Sum, count, " in place"));
    expect(inPlace == recv,
           where<T>("allGather", ReduceOp::Sum, count, " in place") +
               ": wrong");
  }
  // broadcast from every root.
  for (int root = 0; root < n; ++root) {
    std::vector<T> buf(17, T(0));
    if (me == root)
      for (size_t i = 0; i < buf.size(); ++i)
        buf[i] = value<T>(root, i);
    expectOk(c.broadcast(buf.data(), buf.size(), dt, root),
             "broadcast from " + std::to_string(root));
    bool same = true;
    for (size_t i = 0; i < buf.size(); ++i)
      same &= buf[i] == value<T>(root, i);
    expect(same, std::string("broadcast ") + dtypeName(dt) + " from " +
                     std::to_string(root) + ": wrong");
  }
}

// A byte pattern for rank r, element i, of `size` bytes per element.
void pattern(std::vector<uint8_t> &buf, int r, size_t offset = 0) {
  for (size_t b = 0; b < buf.size(); ++b)
    buf[b] = uint8_t((r + 1) * 31 + (b + offset) * 7);
}

// allGather, broadcast and send/recv move every dtype bit for bit.
void checkEveryDtypeMoves(Communicator &c) {
  int n = c.size(), me = c.rank();
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I1,
                   DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                   DType::U16, DType::U32, DType::U64}) {
    size_t es = dtypeSize(dt), count = 9;
    std::string name = dtypeName(dt);
    std::vector<uint8_t> send(count * es), recv(count * es * size_t(n), 0);
    pattern(send, me);
    if (dt == DType::I1)
      for (auto &b : send)
        b &= 1;
    expectOk(c.allGather(send.data(), recv.data(), count, dt),
             "allGather " + name);
    bool same = true;
    for (int r = 0; r < n; ++r) {
      std::vector<uint8_t> want(count * es);
      pattern(want, r);
      if (dt == DType::I1)
        for (auto &b : want)
          b &= 1;
      same &= std::memcmp(want.data(), recv.data() + size_t(r) * want.size(),
                          want.size()) == 0;
    }
    expect(same, "allGather " + name + ": bits differ");
    std::vector<uint8_t> buf(count * es, 0), want(count * es);
    pattern(want, n - 1);
    if (me == n - 1)
      buf = want;
    expectOk(c.broadcast(buf.data(), count, dt, n - 1), "broadcast " + name);
    expect(buf == want, "broadcast " + name + ": bits differ");
  }
  // MPI reduces f16/bf16 in f32 and rounds once (tensor- and
  // context-parallel steps at --precision bf16/fp16 on CPU ranks).
  if (std::string(c.backendName()) == "mpi") {
    uint16_t one = floatToF16(1.0f), sum = 0;
    expectOk(c.allReduce(&one, &sum, 1, DType::F16, ReduceOp::Sum), "allReduce f16");
    expect(f16ToFloat(sum) == float(n), "allReduce f16: the sum of ones is the rank count");
    std::vector<uint16_t> blocks(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      blocks[size_t(r)] = floatToBf16(float(me + r));
    uint16_t largest = 0;
    expectOk(c.reduceScatter(blocks.data(), &largest, 1, DType::BF16, ReduceOp::Max),
             "reduceScatter bf16");
    expect(bf16ToFloat(largest) == float(n - 1 + me), "reduceScatter bf16: the largest block");
  }
  if (std::string(c.backendName()) != "single") {
    uint8_t flag = me == n - 1 ? 1 : 0, any = 7, all = 7;
    expectOk(c.allReduce(&flag, &any, 1, DType::I1, ReduceOp::Max),
             "allReduce i1 max");
    expectOk(c.allReduce(&flag, &all, 1, DType::I1, ReduceOp::Min),
             "allReduce i1 min");
    expect(any == 1 && all == (n == 1 ? 1 : 0), "allReduce i1 min/max");
    expectError(c.allReduce(&flag, &any, 1, DType::I1, ReduceOp::Sum),
                "i1 reduces only with min or max", "allReduce i1 sum");
    // Small integer types reduce too.
    uint8_t u = uint8_t(me + 1), su = 0;
    expectOk(c.allReduce(&u, &su, 1, DType::U8, ReduceOp::Sum),
             "allReduce u8");
    expect(su == n * (n + 1) / 2, "allReduce u8 sum");
  }
}

void checkRing(Communicator &c) {
  int n = c.size(), me = c.rank();
  if (n < 2)
    return;
  int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (size_t count : {size_t(0), size_t(5), size_t(1) << 20}) {
    std::vector<double> out(count), in(count, -1);
    for (size_t i = 0; i < count; ++i)
      out[i] = me * 1e6 + double(i);
    // Even ranks send first, odd ranks receive first: no cycle of blocked
    // sends (large messages are synchronous).
    Status s1, s2;
    if (me % 2 == 0) {
      s1 = c.send(out.data(), count, DType::F64, next);
      s2 = c.recv(in.data(), count, DType::F64, prev);
    } else {
      s2 = c.recv(in.data(), count, DType::F64, prev);
      s1 = c.send(out.data(), count, DType::F64, next);
    }
    std::string what = "ring of " + std::to_string(count) + " f64";
    expectOk(s1, what + " send");
    expectOk(s2, what + " recv");
    bool same = true;
    for (size_t i = 0; i < count; ++i)
      same &= in[i] == prev * 1e6 + double(i);
    expect(same, what + ": wrong values");
  }
  // A shorter message than expected is reported.
  if (me == 0) {
    int32_t three[3] = {1, 2, 3};
    expectOk(c.send(three, 3, DType::I32, 1), "short send");
  } else if (me == 1) {
    int32_t four[4];
    expectError(c.recv(four, 4, DType::I32, 0),
                "recv from rank 0: got 3 i32 elements, expected 4",
                "short recv");
  }
}

// Rank `from`'s element i of its message with `tag` (exact in f32).
float message(int from, int tag, size_t i) {
  return float(from * 1000 + tag * 100 + int(i % 97));
}

std::vector<float> messageOf(int from, int tag, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = message(from, tag, i);
  return v;
}

// 8 MiB: far above Open MPI's eager limit, so a blocking send of it waits
// for its receiver.
constexpr size_t kLargeMessage = size_t(2) << 20;

// A request, or an inactive one after a failure (counted).
P2PRequest expectRequest(StatusOr<P2PRequest> r, const std::string &what) {
  expectOk(r.status(), what);
  return r.ok() ? *std::move(r) : P2PRequest();
}

// Messages to self: the receive may be posted after the send.
void checkSelfMessages(Communicator &c) {
  int me = c.rank();
  std::vector<float> out = messageOf(me, 11, kLargeMessage), in(kLargeMessage, -1);
  std::vector<P2PRequest> both;
  both.push_back(
      expectRequest(c.isend(out.data(), out.size(), DType::F32, me, 11), "isend to self"));
  both.push_back(
      expectRequest(c.irecv(in.data(), in.size(), DType::F32, me, 11), "irecv from self"));
  expectOk(c.waitAll(both), "waitAll of a message to self");
  expect(in == out, "message to self: wrong values");
}

// Every rank isends to both neighbours before receiving anything (with
// blocking sends of 8 MiB this deadlocks) and posts its receives out of
// tag order: tag 2 (from next) before tag 1 (from prev); with 2 ranks both
// come from the same peer, so only the tag tells them apart.
void checkP2PRing(Communicator &c) {
  int n = c.size(), me = c.rank();
  int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<float> toNext = messageOf(me, 1, kLargeMessage),
                     toPrev = messageOf(me, 2, kLargeMessage);
  std::vector<float> fromPrev(kLargeMessage, -1), fromNext(kLargeMessage, -1);
  P2PRequest s1 = expectRequest(c.isend(toNext.data(), kLargeMessage, DType::F32, next, 1),
                                "ring isend to next");
  P2PRequest s2 = expectRequest(c.isend(toPrev.data(), kLargeMessage, DType::F32, prev, 2),
                                "ring isend to prev");
  P2PRequest r2 = expectRequest(c.irecv(fromNext.data(), kLargeMessage, DType::F32, next, 2),
                                "ring irecv tag 2");
  P2PRequest r1 = expectRequest(c.irecv(fromPrev.data(), kLargeMessage, DType::F32, prev, 1),
                                "ring irecv tag 1");
  expect(r1.describe() == "irecv from rank " + std::to_string(prev) + " tag 1",
         "describe: " + r1.describe());
  // Waited in yet another order.
  expectOk(c.wait(r1), "ring wait tag 1");
  expectOk(c.wait(r2), "ring wait tag 2");
  expectOk(c.wait(s2), "ring wait isend to prev");
  expectOk(c.wait(s1), "ring wait isend to next");
  expect(!r1.active() && !r2.active() && !s1.active() && !s2.active(),
         "ring requests still active after wait");
  expect(fromPrev == messageOf(prev, 1, kLargeMessage), "ring: wrong message from prev (tag 1)");
  expect(fromNext == messageOf(next, 2, kLargeMessage), "ring: wrong message from next (tag 2)");

  // isend, then the blocking recv (tag 0): the pipeline's "send on, then
  // wait for what comes in".
  std::vector<float> in(kLargeMessage, -1);
  P2PRequest s0 = expectRequest(c.isend(toNext.data(), kLargeMessage, DType::F32, next, 0),
                                "isend tag 0");
  expectOk(c.recv(in.data(), kLargeMessage, DType::F32, prev), "blocking recv after isend");
  expectOk(c.wait(s0), "wait isend tag 0");
  expect(in == messageOf(prev, 1, kLargeMessage), "isend + blocking recv: wrong values");

  // Receives posted first, then the sends; waitAll.
  std::vector<float> a(1000, -1), b(1000, -1);
  std::vector<float> outA = messageOf(me, 3, 1000), outB = messageOf(me, 4, 1000);
  std::vector<P2PRequest> all;
  all.push_back(expectRequest(c.irecv(a.data(), 1000, DType::F32, prev, 3), "irecv tag 3"));
  all.push_back(expectRequest(c.irecv(b.data(), 1000, DType::F32, next, 4), "irecv tag 4"));
  all.push_back(expectRequest(c.isend(outA.data(), 1000, DType::F32, next, 3), "isend tag 3"));
  all.push_back(expectRequest(c.isend(outB.data(), 1000, DType::F32, prev, 4), "isend tag 4"));
  expectOk(c.waitAll(all), "waitAll");
  expect(a == messageOf(prev, 3, 1000) && b == messageOf(next, 4, 1000), "waitAll: wrong values");

  // Two messages with one tag arrive in sending order; test polls.
  std::vector<float> first(kLargeMessage, -1), second(5, -1);
  std::vector<float> outFirst = messageOf(me, 6, kLargeMessage), outSecond = messageOf(me, 7, 5);
  P2PRequest f = expectRequest(c.isend(outFirst.data(), kLargeMessage, DType::F32, next, 6),
                               "isend tag 6 (first)");
  P2PRequest g = expectRequest(c.isend(outSecond.data(), 5, DType::F32, next, 6),
                               "isend tag 6 (second)");
  P2PRequest rf = expectRequest(c.irecv(first.data(), kLargeMessage, DType::F32, prev, 6),
                                "irecv tag 6 (first)");
  P2PRequest rg = expectRequest(c.irecv(second.data(), 5, DType::F32, prev, 6),
                                "irecv tag 6 (second)");
  bool done = false;
  while (!done) {
    StatusOr<bool> t = c.test(rg);
    if (!t.ok())
      expectOk(t.status(), "test"); // counted once, not per poll
    done = !t.ok() || *t;
  }
  expect(!rg.active(), "test said done but the request is still active");
  std::vector<P2PRequest> rest;
  rest.push_back(std::move(rf));
  rest.push_back(std::move(f));
  rest.push_back(std::move(g));
  expectOk(c.waitAll(rest), "waitAll tag 6");
  expect(first == messageOf(prev, 6, kLargeMessage) && second == messageOf(prev, 7, 5),
         "same-tag messages out of sending order");
  StatusOr<bool> again = c.test(rg);
  expect(again.ok() && *again, "test of a completed request");

  // Requests dropped unwaited: a receive nothing was sent to is cancelled
  // (the next tag-13 message goes to a later receive), a send completes
  // (its receiver was posted before it).
  int32_t never = -1, later = -1, out13 = me;
  {
    P2PRequest dropped = expectRequest(c.irecv(&never, 1, DType::I32, prev, 13), "irecv to drop");
  }
  std::vector<float> got14(kLargeMessage, -1);
  P2PRequest r14 = expectRequest(c.irecv(got14.data(), kLargeMessage, DType::F32, prev, 14),
                                 "irecv tag 14");
  expectOk(c.barrier(), "barrier before the dropped isend");
  {
    P2PRequest dropped =
        expectRequest(c.isend(toNext.data(), kLargeMessage, DType::F32, next, 14), "isend to drop");
  }
  P2PRequest s13 = expectRequest(c.isend(&out13, 1, DType::I32, next, 13), "isend tag 13");
  P2PRequest r13 = expectRequest(c.irecv(&later, 1, DType::I32, prev, 13), "irecv tag 13");
  expectOk(c.wait(r14), "wait irecv tag 14");
  expectOk(c.wait(r13), "wait irecv tag 13");
  expectOk(c.wait(s13), "wait isend tag 13");
  expect(got14 == messageOf(prev, 1, kLargeMessage), "dropped isend: wrong values");
  expect(never == -1 && later == prev, "a dropped irecv still received");
}

void checkP2PErrors(Communicator &c) {
  int n = c.size(), me = c.rank();
  float x[4] = {0, 0, 0, 0};
  expectError(c.isend(x, 1, DType::F32, n, 0).status(),
              "isend: peer rank " + std::to_string(n) + " is not in a communicator of size",
              "isend to rank n");
  expectError(c.irecv(x, 1, DType::F32, 0, -3).status(), "irecv with rank 0: tag -3 is outside 0..",
              "irecv tag -3");
  expect(c.maxTag() >= 32767, "maxTag " + std::to_string(c.maxTag()));
  if (c.maxTag() < INT_MAX)
    expectError(c.isend(x, 1, DType::F32, 0, c.maxTag() + 1).status(), "is outside 0..",
                "isend above maxTag");
  if (n < 2)
    return;
  // A shorter message than the receive expects.
  if (me == 0) {
    int32_t three[3] = {1, 2, 3};
    P2PRequest s = expectRequest(c.isend(three, 3, DType::I32, 1, 9), "short isend");
    expectOk(c.wait(s), "short isend wait");
  } else if (me == 1) {
    int32_t four[4];
    P2PRequest r = expectRequest(c.irecv(four, 4, DType::I32, 0, 9), "short irecv");
    expectError(c.wait(r), "irecv from rank 0 tag 9: got 3 i32 elements, expected 4",
                "short irecv wait");
    expect(!r.active(), "a failed wait leaves the request active");
  }
  // A request is completed by the communicator that made it.
  std::unique_ptr<Communicator> copy = expectGroup(c.split(0, me), "split for p2p ownership");
  if (copy) {
    int peer = (me + 1) % n, from = (me + n - 1) % n;
    int32_t out = me, in = -1;
    P2PRequest r = expectRequest(c.irecv(&in, 1, DType::I32, from, 12), "irecv tag 12");
    expectError(copy->wait(r),
                "wait: irecv from rank " + std::to_string(from) +
                    " tag 12 was made by another communicator",
                "wait on another communicator");
    expect(r.active(), "a refused wait completed the request");
    // The split matches its own messages: a tag 12 there is not this one.
    int32_t decoy = -7, got = -1;
    P2PRequest d = expectRequest(copy->isend(&decoy, 1, DType::I32, peer, 12), "split isend");
    P2PRequest dr = expectRequest(copy->irecv(&got, 1, DType::I32, from, 12), "split irecv");
    P2PRequest s = expectRequest(c.isend(&out, 1, DType::I32, peer, 12), "isend tag 12");
    expectOk(c.wait(r), "wait irecv tag 12");
    expectOk(c.wait(s), "wait isend tag 12");
    expectOk(copy->wait(dr), "split wait irecv");
    expectOk(copy->wait(d), "split wait isend");
    expect(in == from && got == -7, "messages crossed communicators");
  }
}

// A ring inside the parity groups (ranks of the group, not the world).
void checkP2PInGroup(Communicator &world) {
  int me = world.rank();
  std::unique_ptr<Communicator> g = expectGroup(world.split(me % 2, me), "p2p parity split");
  if (!g || g->size() < 2)
    return;
  int n = g->size(), r = g->rank();
  int next = (r + 1) % n, prev = (r + n - 1) % n;
  // World rank of group rank k: parity + 2k.
  std::vector<float> out = messageOf(me, 5, 1000), in(1000, -1);
  std::vector<P2PRequest> both;
  both.push_back(expectRequest(g->isend(out.data(), 1000, DType::F32, next, 5), "group isend"));
  both.push_back(expectRequest(g->irecv(in.data(), 1000, DType::F32, prev, 5), "group irecv"));
  expectOk(g->waitAll(both), "group waitAll");
  expect(in == messageOf(me % 2 + 2 * prev, 5, 1000), "group ring: wrong values");
}

void checkP2P(Communicator &c) {
  checkSelfMessages(c);
  checkP2PErrors(c);
  if (c.size() < 2)
    return;
  checkP2PRing(c);
  checkP2PInGroup(c);
}

void checkErrors(Communicator &c) {
  int n = c.size(), me = c.rank();
  float x[4] = {0, 0, 0, 0};
  expectError(c.broadcast(x, 1, DType::F32, n),
              "broadcast: root rank " + std::to_string(n), "broadcast root");
  if (std::string(c.backendName()) == "single")
    return;
  expectError(c.send(x, 1, DType::F32, me), "send: peer rank " +
                                                std::to_string(me) +
                                                " is this rank",
              "send to self");
  expectError(c.recv(x, 1, DType::F32, -1),
              "recv: peer rank -1 is not in a communicator of size",
              "recv from -1");
  expectError(c.allReduce(x, x + 1, 2, DType::F32, ReduceOp::Sum),
              "allReduce: send and recv overlap", "overlapping allReduce");
  expectError(c.split(-5, 0).status(), "split: color -5 is negative",
              "split -5");
}

// World rank of every member of `group`, gathered over it.
std::vector<int> members(Communicator &group, int worldRank) {
  std::vector<int> ranks(size_t(group.size()), -1);
  expectOk(group.allGather(&worldRank, ranks.data(), 1, DType::I32),
           "allGather of world ranks");
  return ranks;
}

void checkGroups(Communicator &world) {
  int n = world.size(), me = world.rank();
  std::unique_ptr<Communicator> parity = expectGroup(world.split(me % 2, me), "split by parity");
  if (!parity)
    return fail("split by parity gave no communicator");
  int expectSize = (n + 1 - me % 2) / 2;
  expect(parity->size() == expectSize && parity->rank() == me / 2,
         "parity group rank/size " + std::to_string(parity->rank()) + "/" +
             std::to_string(parity->size()));
  std::vector<int> want;
  for (int r = me % 2; r < n; r += 2)
    want.push_back(r);
  expect(members(*parity, me) == want, "parity group members");
  int64_t sum = 0, mine = me;
  expectOk(parity->allReduce(&mine, &sum, 1, DType::I64, ReduceOp::Sum),
           "parity allReduce");
  int64_t wantSum = 0;
  for (int r : want)
    wantSum += r;
  expect(sum == wantSum, "parity allReduce sum " + std::to_string(sum));
  checkReductions<float>(*parity);

  // Reversed key: rank order flips.
  std::unique_ptr<Communicator> reversed = expectGroup(world.split(0, -me), "split reversed");
  if (reversed) {
    expect(reversed->rank() == n - 1 - me, "reversed rank");
    std::vector<int> order(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      order[size_t(r)] = n - 1 - r;
    expect(members(*reversed, me) == order, "reversed members");
  }

  // Everyone but rank 0.
  std::unique_ptr<Communicator> rest =
      expectGroup(world.split(me == 0 ? kNoGroup : 0, me), "split without 0");
  expect((me == 0) == !rest, "split without 0: membership");
  if (rest) {
    expect(rest->size() == n - 1 && rest->rank() == me - 1, "rest rank/size");
    expectOk(rest->barrier(), "rest barrier");
    double d = me, total = 0;
    expectOk(rest->allReduce(&d, &total, 1, DType::F64, ReduceOp::Avg),
             "rest avg");
    expect(total == double(n * (n - 1) / 2) / double(n - 1), "rest avg value");
  }

  if (n >= 2) {
    // subgroup lists: ranked in list order.
    std::unique_ptr<Communicator> ends =
        expectGroup(world.subgroup({n - 1, 0}), "subgroup {n-1, 0}");
    bool member = me == 0 || me == n - 1;
    expect(member == bool(ends), "subgroup membership");
    if (ends) {
      expect(ends->size() == 2 && ends->rank() == (me == 0 ? 1 : 0),
             "subgroup ranks");
      int32_t token = me == n - 1 ? 4242 : 0;
      expectOk(ends->broadcast(&token, 1, DType::I32, 0), "subgroup bcast");
      expect(token == 4242, "subgroup broadcast from world rank n-1");
      // A split of a split.
      std::unique_ptr<Communicator> alone =
          expectGroup(ends->split(ends->rank(), 0), "split of subgroup");
      expect(alone && alone->size() == 1, "split of subgroup: size 1");
    }
  }
  expectError(world.subgroup({0, n}).status(),
              "subgroup: listed rank " + std::to_string(n) + " is not in",
              "subgroup out of range");
}

void checkLarge(Communicator &c) {
  size_t count = 3000001;
  std::vector<float> buf(count);
  for (size_t i = 0; i < count; ++i)
    buf[i] = float((c.rank() + 1) * (i % 100));
  expectOk(c.allReduce(buf.data(), buf.data(), count, DType::F32,
                       ReduceOp::Sum),
           "large allReduce");
  int n = c.size();
  bool same = true;
  for (size_t i = 0; i < count; ++i)
    same &= buf[i] == float(n * (n + 1) / 2 * int(i % 100));
  expect(same, "large allReduce values");
}

int numerics(const std::string &backend, const char *expectBackend) {
  StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
  if (!launch.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(launch.status().message()).c_str());
    return 1;
  }
  const LaunchEnvironment &env = *launch;
  gRank = env.rank;
  StatusOr<std::unique_ptr<Communicator>> created = createCommunicator(backend);
  if (!created.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<Communicator> comm = *std::move(created);
  gRank = comm->rank();
  if (expectBackend)
    expect(std::string(comm->backendName()) == expectBackend,
           std::string("backend ") + comm->backendName() + ", expected " +
               expectBackend);
  if (env.size > 0)
    expect(comm->size() == env.size && comm->rank() == env.rank,
           "rank/size differ from the launch environment");
  expectOk(comm->barrier(), "barrier");
  checkReductions<float>(*comm);
  checkReductions<double>(*comm);
  checkReductions<int32_t>(*comm);
  checkReductions<int64_t>(*comm);
  checkEveryDtypeMoves(*comm);
  checkRing(*comm);
  checkErrors(*comm);
  checkGroups(*comm);
  checkLarge(*comm);
  checkP2P(*comm);
  expectOk(comm->barrier(), "final barrier");
  if (gFailures) {
    std::fprintf(stderr, "error: rank %d: %d of %d checks failed\n", gRank,
                 gFailures, gChecks);
    return 1;
  }
  std::fprintf(stderr, "rank %d: %d checks passed (%s, size %d)\n", gRank,
               gChecks, comm->backendName(), comm->size());
  return 0;
}

// kill / hang / hang-recv / hang-irecv / kill-p2p: rank 1 does not take
// part.
int lostPeer(const std::string &mode) {
  StatusOr<std::unique_ptr<Communicator>> created = createCommunicator("auto");
  if (!created.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<Communicator> comm = *std::move(created);
  int me = comm->rank();
  if (Status s = comm->barrier(); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "rank %d: pid %d ready\n", me, int(::getpid()));
  if (me == 1) {
    // kill-p2p: the others must be in their point-to-point waits, not still
    // leaving the barrier (which can need rank 1 after it has left).
    if (mode == "kill-p2p")
      ::usleep(500 * 1000);
    if (mode == "kill" || mode == "kill-p2p")
      std::raise(SIGKILL);
    ::sleep(60);
    return 0;
  }
  Status s;
  float x = 1, y = 0;
  if (mode == "hang-recv") {
    if (me == 0)
      s = comm->recv(&y, 1, DType::F32, 1);
    else
      ::sleep(60);
  } else if (mode == "hang-irecv") {
    if (me == 0) {
      StatusOr<P2PRequest> r = comm->irecv(&y, 1, DType::F32, 1, 4);
      s = r.ok() ? comm->wait(*r) : Status(r.status());
    } else {
      ::sleep(60);
    }
  } else if (mode == "kill-p2p") {
    if (me == 0) {
      s = comm->recv(&y, 1, DType::F32, 1);
    } else {
      std::vector<float> big(kLargeMessage, 1.f);
      StatusOr<P2PRequest> send = comm->isend(big.data(), big.size(), DType::F32, 1, 2);
      StatusOr<P2PRequest> r = comm->irecv(&y, 1, DType::F32, 1, 3);
      s = !send.ok() ? Status(send.status())
          : r.ok()   ? comm->wait(*r)
                     : Status(r.status());
    }
  } else {
    s = comm->allReduce(&x, &y, 1, DType::F32, ReduceOp::Sum);
  }
  if (!s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "error: rank %d: the call returned without rank 1\n",
               me);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::string backend = argc > 2 ? argv[2] : "auto";
  if (mode == "numerics")
    return numerics(backend, backend == "auto" ? nullptr : backend.c_str());
  if (mode == "single") {
    StatusOr<LaunchEnvironment> env = readLaunchEnvironment();
    if (!env.ok() || env->launched()) {
      std::fprintf(stderr, "error: not a plain process: %s\n",
                   env.ok() ? env->describe().c_str()
                            : std::string(env.status().message()).c_str());
      return 1;
    }
    return numerics("auto", "single");
  }
  if (mode == "kill" || mode == "hang" || mode == "hang-recv" ||
      mode == "hang-irecv" || mode == "kill-p2p")
    return lostPeer(mode);
  std::fprintf(stderr, "usage: %s numerics|single|kill|hang|hang-recv|"
                       "hang-irecv|kill-p2p [auto|single|mpi|nccl]\n",
               argv[0]);
  return 2;
}
