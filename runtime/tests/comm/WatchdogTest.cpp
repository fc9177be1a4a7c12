//===- WatchdogTest.cpp - calls that wait too long or on a lost peer --------===//
//
// The watchdog in death tests (each runs in a re-executed child): a watched
// call past the timeout, and a peer process that is gone (reaped, a zombie,
// or its pid reused), end the process with exit status kExitRankLost (75) and one `error:`
// line naming the rank(s); calls that finish in time, calls with the
// timeout off, and calls that do not check peers are left alone.
// TRC_COLLECTIVE_TIMEOUT_S parsing.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Watchdog.h"
#include "runtime/support/ExitCodes.h"

#include "ScopedEnvironment.h"
#include "ScopedLocale.h"
#include "StatusTesting.h"

#include <gtest/gtest.h>

#include <csignal>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fstream>
#include <iterator>
#include <thread>
#include <unistd.h>

using namespace trc::rt;
using trc::rt::test::ScopedEnvironment;

namespace {

void sleepSeconds(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// A child process that sleeps until killed, or until its parent dies (a
// death test's child must not leave it holding gtest's pipe open).
pid_t startSleeper() {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(0);
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// SIGSTOP for a sleeper once it sleeps (state S): stopped earlier, it would
// not have armed its parent-death signal and could outlive the test.
void stopSleeper(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(path);
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'S')
      break;
    sleepSeconds(0.01);
  }
  ::kill(pid, SIGSTOP);
}

// Peers for a world of `n`: rank 0 is this process, rank `child` a sleeper.
std::vector<PeerProcess> peersWith(int n, int childRank, pid_t child) {
  PeerProcess self = identifyThisProcess();
  std::vector<PeerProcess> peers(size_t(n), self);
  for (int r = 1; r < n; ++r)
    peers[size_t(r)].pid = 1 << 30; // beyond pid_max: looks gone
  // Only the sleeper is on "this machine"; the others are elsewhere.
  for (int r = 1; r < n; ++r)
    peers[size_t(r)].namespaceKey = "elsewhere";
  peers[size_t(childRank)].pid = child;
  peers[size_t(childRank)].namespaceKey = self.namespaceKey;
  peers[size_t(childRank)].startTime = 0; // not checked
  return peers;
}

class WatchdogDeath : public ::testing::Test {
protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

} // namespace

TEST(Watchdog, ReadsTheTimeoutVariable) {
  ScopedEnvironment e;
  double s = -1;
  TRC_ASSERT_OK_AND_ASSIGN(s, readCollectiveTimeout());
  EXPECT_EQ(s, 300);
  e.set("TRC_COLLECTIVE_TIMEOUT_S", "2.5");
  TRC_ASSERT_OK_AND_ASSIGN(s, readCollectiveTimeout());
  EXPECT_EQ(s, 2.5);
  e.set("TRC_COLLECTIVE_TIMEOUT_S", "0");
  TRC_ASSERT_OK_AND_ASSIGN(s, readCollectiveTimeout());
  EXPECT_EQ(s, 0);
  for (const char *bad : {"", "abc", "-1", "5s", "inf", "nan", " 3"}) {
    e.set("TRC_COLLECTIVE_TIMEOUT_S", bad);
    Status st = readCollectiveTimeout().status();
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.message(), std::string("environment variable "
                                        "TRC_COLLECTIVE_TIMEOUT_S='") +
                                bad + "' is not a number of seconds >= 0");
  }
}

// strtod read the variable with the process's LC_NUMERIC: under de_DE
// "2.5" was rejected (it stopped at the '.') and "2,5" accepted.
TEST(Watchdog, TheTimeoutVariableIgnoresTheLocale) {
  trc::rt::test::ScopedDecimalCommaLocale locale;
  if (!locale.ok())
    GTEST_SKIP() << "no decimal-comma locale installed";
  ScopedEnvironment e;
  double s = -1;
  e.set("TRC_COLLECTIVE_TIMEOUT_S", "2.5");
  StatusOr<double> read = readCollectiveTimeout();
  ASSERT_TRUE(read.ok()) << locale.name();
  s = *read;
  EXPECT_EQ(s, 2.5);
  e.set("TRC_COLLECTIVE_TIMEOUT_S", "2,5");
  EXPECT_FALSE(readCollectiveTimeout().ok()) << locale.name();
}

TEST(Watchdog, IdentifiesThisProcess) {
  PeerProcess self = identifyThisProcess();
  EXPECT_EQ(self.pid, ::getpid());
  EXPECT_GT(self.startTime, 0u);
  EXPECT_FALSE(self.namespaceKey.empty());
  EXPECT_FALSE(self.host.empty());
}

TEST(Watchdog, CallsThatFinishAreLeftAlone) {
  pid_t child = startSleeper();
  {
    Watchdog dog;
    dog.setPollSeconds(0.01);
    dog.setTimeout(0.5);
    dog.setPeers(0, 3, peersWith(3, 2, child));
    for (int i = 0; i < 20; ++i) {
      WatchedCall call;
      call.what = "allReduce";
      auto guard = dog.watch(call);
      sleepSeconds(0.02);
    }
    // Nothing watched: a long pause is fine.
    sleepSeconds(0.6);
    // The timeout off: a call may wait as long as it likes.
    dog.setTimeout(0);
    WatchedCall call;
    call.what = "barrier";
    auto guard = dog.watch(call);
    sleepSeconds(0.6);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  SUCCEED();
}

TEST_F(WatchdogDeath, CollectiveTimesOut) {
  EXPECT_EXIT(
      {
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0.2);
        dog.setPeers(0, 4, {});
        WatchedCall call;
        call.what = "allReduce";
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "^error: collective allReduce timed out after 0.2 s waiting for ranks "
      "1, 2, 3 \\(rank\\(s\\) not responding; this is rank 0 of 4\\)\n$");
}

TEST_F(WatchdogDeath, SubgroupCollectiveNamesItsMembers) {
  EXPECT_EXIT(
      {
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0.2);
        dog.setPeers(2, 8, {});
        std::vector<int> group({0, 2, 4, 6});
        WatchedCall call;
        call.what = "broadcast";
        call.group = &group;
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "error: collective broadcast timed out after 0.2 s waiting for ranks "
      "0, 4, 6 \\(rank\\(s\\) not responding; this is rank 2 of 8\\)");
}

TEST_F(WatchdogDeath, PointToPointNamesThePeer) {
  EXPECT_EXIT(
      {
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0.3);
        dog.setPeers(0, 2, {});
        WatchedCall call;
        call.what = "recv from";
        call.peer = 1;
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "error: recv from rank 1 timed out after 0.3 s waiting for rank 1 "
      "\\(not responding; this is rank 0 of 2\\)");
}

TEST_F(WatchdogDeath, LostPeerIsNamed) {
  EXPECT_EXIT(
      {
        pid_t child = startSleeper();
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0); // no timeout: only the loss can end it
        dog.setPeers(0, 4, peersWith(4, 3, child));
        WatchedCall call;
        call.what = "allReduce";
        auto guard = dog.watch(call);
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "^error: rank 3 \\(pid [0-9]+ on host .*\\) is gone \\(exited or was "
      "killed\\) while rank 0 waited in collective allReduce\n$");
}

// A peer that printed its own error marked its exit (markReportedExit):
// this rank then ends with kExitError and nothing printed, so the job's
// one error line is the peer's.
TEST_F(WatchdogDeath, PeerWithAReportedExitEndsThisRankQuietly) {
  std::string dir = ::testing::TempDir() + "trc-reported-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  EXPECT_EXIT(
      {
        pid_t child = ::fork();
        if (child == 0) {
          markReportedExit(dir);
          ::_exit(1);
        }
        ::waitpid(child, nullptr, 0);
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0);
        std::vector<PeerProcess> peers = peersWith(2, 1, child);
        // The child's start time, as its marker's name spells it.
        if (DIR *d = ::opendir(dir.c_str())) {
          while (dirent *e = ::readdir(d)) {
            std::string name = e->d_name;
            if (name.rfind("trc-reported-exit-", 0) == 0)
              peers[1].startTime = std::stoull(name.substr(name.rfind('-') + 1));
          }
          ::closedir(d);
        }
        dog.setPeers(0, 2, peers);
        dog.setReportedExitDir(dir);
        WatchedCall call;
        call.what = "allReduce";
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitError), "^$");
  EXPECT_FALSE(exitWasReported(identifyThisProcess(), dir));
}

TEST_F(WatchdogDeath, ZombiePeerIsLost) {
  EXPECT_EXIT(
      {
        pid_t child = startSleeper();
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0);
        dog.setPeers(0, 2, peersWith(2, 1, child));
        WatchedCall call;
        call.what = "send to";
        call.peer = 1;
        auto guard = dog.watch(call);
        ::kill(child, SIGKILL); // not reaped: a zombie
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "error: rank 1 \\(pid [0-9]+ on host .*\\) is gone \\(exited or was "
      "killed\\) while rank 0 waited in send to rank 1");
}

TEST_F(WatchdogDeath, StoppedPeerIsNamed) {
  // The stopped sleeper belongs to the test, not to the dying child, so
  // that the test can end it afterwards.
  pid_t child = startSleeper();
  stopSleeper(child);
  EXPECT_EXIT(
      {
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0); // no timeout: only the stop can end it
        dog.setStoppedPeerSeconds(0.3);
        dog.setPeers(0, 2, peersWith(2, 1, child));
        WatchedCall call;
        call.what = "allReduce";
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "^error: rank 1 \\(pid [0-9]+ on host .*\\) has been stopped \\(SIGSTOP or SIGTSTP\\) "
      "for 0.3 s while rank 0 waited in collective allReduce\n$");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

// A peer stopped for less than the grace and continued is not lost.
TEST(Watchdog, ABriefStopIsLeftAlone) {
  pid_t child = startSleeper();
  {
    Watchdog dog;
    dog.setPollSeconds(0.02);
    dog.setTimeout(0);
    dog.setStoppedPeerSeconds(2);
    dog.setPeers(0, 2, peersWith(2, 1, child));
    WatchedCall call;
    call.what = "allReduce";
    auto guard = dog.watch(call);
    stopSleeper(child);
    sleepSeconds(0.5);
    ::kill(child, SIGCONT);
    sleepSeconds(2.5); // past the grace, counted from the stop: still here
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_F(WatchdogDeath, AwaitedPeerIsNamedFirst) {
  // Ranks 1 and 2 are both gone; the receive waits for rank 2, so rank 2
  // is named (not the lowest lost rank).
  EXPECT_EXIT(
      {
        pid_t one = startSleeper();
        pid_t two = startSleeper();
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0);
        std::vector<PeerProcess> peers = peersWith(3, 1, one);
        peers[2] = peers[1];
        peers[2].pid = two;
        dog.setPeers(0, 3, peers);
        ::kill(one, SIGKILL);
        ::kill(two, SIGKILL);
        ::waitpid(one, nullptr, 0);
        ::waitpid(two, nullptr, 0);
        WatchedCall call;
        call.what = "irecv tag 3 from";
        call.peer = 2;
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost),
      "^error: rank 2 \\(pid [0-9]+ on host .*\\) is gone \\(exited or was "
      "killed\\) while rank 0 waited in irecv tag 3 from rank 2\n$");
}

TEST_F(WatchdogDeath, ReusedPidIsLost) {
  EXPECT_EXIT(
      {
        pid_t child = startSleeper();
        Watchdog dog;
        dog.setPollSeconds(0.02);
        dog.setTimeout(0);
        std::vector<PeerProcess> peers = peersWith(2, 1, child);
        peers[1].startTime = 1; // another process than the one recorded
        dog.setPeers(0, 2, peers);
        WatchedCall call;
        call.what = "barrier";
        auto guard = dog.watch(call);
        sleepSeconds(30);
      },
      ::testing::ExitedWithCode(kExitRankLost), "error: rank 1 .* is gone");
}

TEST(Watchdog, PeersAreNotCheckedWhenTheCallSaysSo) {
  pid_t child = startSleeper();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  Watchdog dog;
  dog.setPollSeconds(0.01);
  dog.setTimeout(0);
  dog.setPeers(0, 2, peersWith(2, 1, child));
  WatchedCall call;
  call.what = "MPI_Finalize";
  call.checkPeers = false;
  auto guard = dog.watch(call);
  sleepSeconds(0.2);
  SUCCEED();
}
