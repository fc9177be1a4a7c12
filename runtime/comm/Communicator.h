//===- Communicator.h - the collective-communication interface --------------===//
//
// What the distributed runtime needs from MPI or NCCL, on raw buffers of
// `count` elements of a DType, in the memory of the backend the communicator
// was made for (host memory for MPI/CPU, device memory for NCCL):
//   allReduce      recv[i] = op over ranks of send[i]            (count)
//   allGather      recv = concat over ranks of send   (send count; recv holds
//                  size() * count)
//   reduceScatter  recv = this rank's count-slice of op over ranks of send
//                  (recv count; send holds size() * count)
//   broadcast      buf on every rank = buf on `root`
//   send / recv    point-to-point with `peer` (blocking, tag 0)
//   barrier        every rank arrives before any leaves
//   isend / irecv  non-blocking point-to-point with `peer` and a `tag`;
//                  wait / waitAll / test complete them (see below)
// send == recv is allowed (in place) for allReduce, and send == recv +
// rank() * count elements for allGather; other overlaps are errors. Avg is
// the sum divided by size() (integer division for integer dtypes). All calls
// but isend/irecv are blocking; a process's communicators (and their
// requests) are used by one thread at a time.
// Every rank of a communicator makes the same collective calls (all but
// send/recv) in the same order with the same count, dtype, op and root.
//
// Process groups: split(color, key) is collective over this communicator;
// the ranks passing the same color >= 0 form a new communicator, ranked by
// key (ties: by rank here); kNoGroup (-1) joins none (the result is null).
// subgroup(ranks) is split with color 0 for the listed ranks, ranked in list
// order (every rank passes the same list).
//
// Non-blocking point-to-point (the pipeline executor's activations and
// gradients): isend/irecv start a message and return a P2PRequest at once;
// a send never waits for its receiver, so every rank may send to both
// neighbours before receiving (blocking sends of large messages deadlock
// there). wait(request) blocks until it is done; waitAll waits for each
// and returns the first error; test completes it if it is done, else says
// it is not. A receive matches the oldest unmatched send from its peer
// with the same tag (0 <= tag <= maxTag()), whatever the order the two
// sides posted in, and must name the same count and dtype: a different
// count is an error at wait naming the peer, tag and both counts.
// The buffer of a request belongs to the communicator until the request
// is complete (wait/test said so, or the request was destroyed): do not
// free, read (irecv) or write (isend) it before. Destroying an incomplete
// request completes it first: a receive not yet matched is cancelled, a
// send is waited for (the watchdog bounds that wait). A request is waited
// on the communicator that made it (another one refuses it), before that
// communicator is destroyed. Waiting is watched like every blocking call
// (Watchdog.h): a lost peer or the timeout ends the process with an error
// naming the peer. The blocking send/recv use tag 0, so they match
// isend/irecv of tag 0 too. Backends differ in what they can promise:
//   single  a message to this rank (peer 0) is copied and queued at isend
//           and matched by tag; waiting for a receive nothing was sent to
//           is an error (it would never end), not a hang
//   mpi     MPI_Isend/MPI_Irecv/MPI_Wait/MPI_Test; messages to self allowed
//   nccl    no tags on the wire: see NcclCommunicator.h (operations start
//           at the next wait, as one NCCL group; untested without a GPU)
//
// Started collectives (a compiled step's, issue 31's communication
// stream): start(call) issues an all-reduce, all-gather, reduce-scatter or
// ring permute and returns a handle; finish(handle) orders what follows
// after it. Host backends (single, mpi) run the call to completion in start
// and finish does nothing. A device backend told the compute stream
// (setComputeStream: the CUstream compiled programs run on) orders its
// stream after the compute stream's work so far with an event, enqueues
// the call and returns at once; finish makes the compute stream wait for it
// (cuStreamWaitEvent: the host never blocks), so the kernels enqueued
// between start and finish overlap the transfer. Between the two, `send`
// must stay unchanged and `recv` unread. Every rank starts the same calls
// in the same order; each handle is finished once, before the communicator
// goes. With a compute stream set, the blocking calls too wait for the
// compute stream's work (a stream wait) before they run, so a program's
// launches need not be waited for one by one.
//
// Backends (createCommunicator): "single" (SingleProcessCommunicator.h,
// world size 1), "mpi" (MpiCommunicator.h, host memory, libmpi loaded at run
// time), "nccl" (NcclCommunicator.h, CUDA device memory, libnccl loaded at
// run time, bootstrapped over MPI), "auto" (MPI when the launch environment
// says more than one process, else single; LaunchEnvironment.h).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMMUNICATOR_H
#define TRC_RUNTIME_COMMUNICATOR_H

#include "runtime/support/DType.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trc::rt {

enum class ReduceOp { Sum, Prod, Min, Max, Avg };

// "sum", "prod", "min", "max", "avg".
const char *reduceOpName(ReduceOp op);

// The color of a rank that joins no group in Communicator::split.
constexpr int kNoGroup = -1;

// A backend's in-flight isend/irecv (CommunicatorSupport.h).
struct P2PState;

/// One non-blocking message, owned by the caller (move-only). Active from
/// isend/irecv until wait/waitAll/test completes it; a default-made or
/// completed request is inactive, and waiting for it does nothing.
class P2PRequest {
public:
  P2PRequest();
  explicit P2PRequest(std::unique_ptr<P2PState> state);
  P2PRequest(P2PRequest &&other) noexcept;
  /// Completes the request this one held (as the destructor does).
  P2PRequest &operator=(P2PRequest &&other) noexcept;
  /// Completes an active request (see Communicator.h) before it goes.
  ~P2PRequest();

  bool active() const { return state_ != nullptr; }
  /// "isend to rank 1 tag 7" / "irecv from rank 0 tag 3"; "" when inactive.
  std::string describe() const;

  // For backends: the state, and marking the request complete.
  P2PState *state() const { return state_.get(); }
  void finish();

private:
  std::unique_ptr<P2PState> state_;
};

/// One collective for Communicator::start.
struct CollectiveCall {
  enum class Kind { AllReduce, AllGather, ReduceScatter, Permute };
  Kind kind = Kind::AllReduce;
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0; // as the blocking call takes it (permute: elements moved)
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int shift = 0; // permute: receive from rank - shift, send to rank + shift
};

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single", "mpi", "nccl".
  virtual const char *backendName() const = 0;

  virtual Status allReduce(const void *send, void *recv, size_t count,
                           DType dtype, ReduceOp op) = 0;
  virtual Status allGather(const void *send, void *recv, size_t count,
                           DType dtype) = 0;
  virtual Status reduceScatter(const void *send, void *recv, size_t count,
                               DType dtype, ReduceOp op) = 0;
  virtual Status broadcast(void *buf, size_t count, DType dtype, int root) = 0;
  virtual Status send(const void *buf, size_t count, DType dtype, int peer) = 0;
  virtual Status recv(void *buf, size_t count, DType dtype, int peer) = 0;
  virtual Status barrier() = 0;

  /// The largest tag isend/irecv take (MPI guarantees at least 32767).
  virtual int maxTag() const = 0;
  /// Starts sending `count` elements of `buf` to `peer` with `tag`; `buf`
  /// must stay unchanged and alive until the request is complete.
  virtual StatusOr<P2PRequest> isend(const void *buf, size_t count,
                                     DType dtype, int peer, int tag) = 0;
  /// Starts receiving `count` elements from `peer`'s message with `tag`
  /// into `buf`, which must stay alive (and unread) until completion.
  virtual StatusOr<P2PRequest> irecv(void *buf, size_t count, DType dtype,
                                     int peer, int tag) = 0;
  /// Blocks until `request` is done; it is then inactive, also on error
  /// (the message names the peer and the tag).
  virtual Status wait(P2PRequest &request) = 0;
  /// Whether `request` is done (then completed, as wait); never blocks on
  /// the peer.
  virtual StatusOr<bool> test(P2PRequest &request) = 0;
  /// Waits for every request (all are inactive afterwards); the first
  /// error, if any.
  virtual Status waitAll(std::vector<P2PRequest> &requests);

  /// Starts `call` (see above); the handle is for finish.
  virtual StatusOr<uint64_t> start(const CollectiveCall &call);
  /// Orders the compute stream after the started call (or nothing: it is
  /// done); the first error of the call, if it is known.
  virtual Status finish(uint64_t handle);
  /// The stream compiled programs run on (null: none any more); true when
  /// this backend orders its work after it (a device backend), false when
  /// it cannot.
  virtual bool setComputeStream(void *stream) {
    (void)stream;
    return false;
  }

  /// The communicator of this rank's group (see above); null for kNoGroup.
  virtual StatusOr<std::unique_ptr<Communicator>> split(int color, int key) = 0;
  /// Collective over this communicator; `ranks` are distinct ranks of it.
  /// Null on a rank not listed.
  StatusOr<std::unique_ptr<Communicator>> subgroup(const std::vector<int> &ranks);
};

/// A communicator of the named backend ("auto", "single", "mpi", "nccl")
/// for this process's launch environment; errors name the missing library,
/// the bad environment variable or the missing device.
StatusOr<std::unique_ptr<Communicator>> createCommunicator(const std::string &backend);

} // namespace trc::rt

#endif // TRC_RUNTIME_COMMUNICATOR_H
