//===- ProfileTest.cpp - measured device profiles and the fits behind them ===//
//
// The fits recover known constants from synthetic timings; profile files
// round-trip, merge by rank count and reject malformed input by key; a
// measured profile changes what the cost model predicts the way its
// constants say (twice the matmul rate: less time; ZB-H1 below 1F1B);
// measuredFor shares a node's rates among more ranks than measured.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Fit.h"
#include "trc/Plan/PlanSpec.h"
#include "trc/Plan/ProfileFile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

using namespace trc;
using namespace trc::plan;

namespace {

MeasuredConstants entry(int ranks) {
  MeasuredConstants m;
  m.ranks = ranks;
  m.threads = 2;
  m.matmul = {100e9, 50e9, 2e-6};
  m.kernelBytesPerSecond = 20e9;
  m.kernelOpSeconds = 1e-6;
  m.kernelProbe = "compiled";
  m.streamBytesPerSecond = 10e9;
  m.collectives["all_reduce"][2] = {10e-6, 3e9};
  m.collectives["p2p"][2] = {5e-6, 4e9};
  return m;
}

DeviceProfile cpuProfile(std::initializer_list<int> rankCounts) {
  DeviceProfile p;
  EXPECT_TRUE(deviceProfile("cpu", p));
  p.source = "unit test";
  for (int r : rankCounts)
    mergeMeasured(p, entry(r));
  return p;
}

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(PlanFit, RecoversMatmulConstants) {
  std::vector<MatmulSample> samples;
  const double F = 120e9, B = 40e9, c = 3e-6;
  for (double m : {64.0, 256.0, 1024.0})
    for (double k : {32.0, 256.0, 1024.0})
      for (double batch : {1.0, 16.0}) {
        double flops = 2 * m * 256 * k * batch, bytes = 4 * (m * k + k * 256 + m * 256) * batch;
        samples.push_back({m, 256, k, batch, flops / F + bytes / B + batch * c});
      }
  MatmulFit f = fitMatmul(samples, 4);
  EXPECT_NEAR(f.flopsPerSecond / F, 1, 1e-6);
  EXPECT_NEAR(f.bytesPerSecond / B, 1, 1e-6);
  EXPECT_NEAR(f.callSeconds / c, 1, 1e-6);
}

TEST(PlanFit, DropsNegativeTermsAndFitsLinks) {
  // Pure latency + bandwidth, with a little noise: no negative latency.
  std::vector<TransferSample> t;
  for (double bytes : {4096.0, 65536.0, 1048576.0, 8388608.0})
    t.push_back({bytes, 20e-6 + bytes / 2e9});
  LinkFit l = fitLink(t);
  EXPECT_NEAR(l.latency, 20e-6, 1e-9);
  EXPECT_NEAR(l.bandwidth / 2e9, 1, 1e-6);
  // Time proportional to bytes only: the op term is dropped, not negative.
  std::vector<KernelSample> k = {{30, 1e6, 1e6 / 15e9}, {30, 8e6, 8e6 / 15e9},
                                 {30, 32e6, 32e6 / 15e9}};
  MeasuredConstants m;
  fitKernels(k, m);
  EXPECT_NEAR(m.kernelBytesPerSecond / 15e9, 1, 1e-6);
  EXPECT_GE(m.kernelOpSeconds, 0);
  EXPECT_LT(m.kernelOpSeconds, 1e-12);
}

TEST(PlanProfile, RoundTripsAndMergesByRanks) {
  DeviceProfile p = cpuProfile({4, 1});
  p.measured[0].samplesJson = R"({"matmul_m_n_k_batch_s":[[1,2,3,1,0.5]]})";
  std::string json = deviceProfileJson(p);
  DeviceProfile back;
  rt::Status s = parseDeviceProfile(json, back);
  ASSERT_TRUE(s.ok()) << s.message() << "\n" << json;
  ASSERT_EQ(back.measured.size(), 2u);
  EXPECT_EQ(back.measured[0].ranks, 1);
  EXPECT_EQ(back.measured[1].ranks, 4);
  EXPECT_EQ(back.kind, "cpu");
  EXPECT_EQ(back.elementBytes, 4);
  EXPECT_EQ(back.source, "unit test");
  EXPECT_DOUBLE_EQ(back.measured[1].matmul.flopsPerSecond, 100e9);
  EXPECT_DOUBLE_EQ(back.measured[1].collectives["all_reduce"][2].latency, 10e-6);
  EXPECT_EQ(back.measured[0].samplesJson, p.measured[0].samplesJson);
  MeasuredConstants again = entry(4);
  again.matmul.flopsPerSecond = 7e9;
  mergeMeasured(back, again);
  ASSERT_EQ(back.measured.size(), 2u);
  EXPECT_DOUBLE_EQ(back.measured[1].matmul.flopsPerSecond, 7e9);
}

TEST(PlanProfile, MalformedFilesNameTheKey) {
  std::string good = deviceProfileJson(cpuProfile({1}));
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"device\": \"cpu\"", "\"device\": \"tpu\"", "key 'device': unknown device kind 'tpu'"},
      {"\"gflops\": ", "\"gflops\": -", "key 'measured[0].matmul.gflops'"},
      {"\"threads\"", "\"thread\"", "unknown key 'measured[0].thread'"},
      {"\"trc_device_profile\": 1", "\"trc_device_profile\": 9", "version 9"},
      {"\"probe\": \"compiled\"", "\"probe\": \"guessed\"", "key 'measured[0].kernels.probe'"},
      {"{\"ranks\": 2, \"latency_us\": ",
       "{\"ranks\": 2, \"latency_us\": \"x\", \"gbs\": 1}, {\"ranks\": 3, \"latency_us\": ",
       "key 'measured[0].collectives.all_reduce[0].latency_us': expected a number"},
  };
  for (const Case &c : cases) {
    std::string text = good;
    size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    DeviceProfile out;
    rt::Status s = parseDeviceProfile(text, out);
    ASSERT_FALSE(s.ok()) << c.to;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
  DeviceProfile out;
  EXPECT_NE(parseDeviceProfile("[1]", out).message().find("expected a JSON object"),
            std::string::npos);
  EXPECT_NE(parseDeviceProfile("{\"trc_device_profile\": 1, \"device\": \"cpu\"}", out)
                .message()
                .find("missing key 'measured'"),
            std::string::npos);
  std::string twice = deviceProfileJson(cpuProfile({2}));
  size_t open = twice.find("[\n  {"), close = twice.rfind("}]}");
  std::string item = twice.substr(open + 2, close - open - 1);
  twice.insert(close + 1, ", " + item);
  EXPECT_NE(parseDeviceProfile(twice, out).message().find("2 ranks measured twice"),
            std::string::npos)
      << parseDeviceProfile(twice, out).message();
}

TEST(PlanProfile, MoreRanksThanMeasuredShareTheRates) {
  DeviceProfile p = cpuProfile({1, 2});
  std::optional<MeasuredConstants> two = p.measuredFor(2), four = p.measuredFor(4);
  ASSERT_TRUE(two && four);
  EXPECT_EQ(two->ranks, 2);
  EXPECT_DOUBLE_EQ(four->matmul.flopsPerSecond, two->matmul.flopsPerSecond / 2);
  EXPECT_DOUBLE_EQ(four->kernelBytesPerSecond, two->kernelBytesPerSecond / 2);
  EXPECT_EQ(cpuProfile({2}).measuredFor(1)->ranks, 2); // the fewest above
  EXPECT_FALSE(DeviceProfile().measuredFor(1).has_value());
  // A node's memory is shared by its ranks.
  EXPECT_DOUBLE_EQ(p.memoryPerDevice(4), p.nodeMemoryBytes / 4);
}

TEST(PlanProfile, ClustersAdoptProfilesOfTheirKind) {
  std::string path = writeTemp("profile.json", deviceProfileJson(cpuProfile({2})));
  Cluster c;
  ASSERT_TRUE(parseCluster("cpu:2", c, path).ok());
  EXPECT_EQ(c.device.measured.size(), 1u);
  EXPECT_EQ(c.devices(), 2);
  rt::Status s = parseCluster("h200:8", c, path);
  EXPECT_NE(s.message().find("--device-profile " + path + ": key 'device': the profile is of "
                             "'cpu', the cluster's devices are 'h200'"),
            std::string::npos)
      << s.message();
  std::string cluster = writeTemp("cluster.json", R"({"device": "cpu", "nodes": 1,
      "gpus_per_node": 4, "device_profile": "profile.json"})");
  ASSERT_TRUE(parseCluster(cluster, c).ok());
  EXPECT_EQ(c.device.source, "unit test");
  EXPECT_EQ(c.devices(), 4);
  std::string missing = writeTemp("cluster2.json", R"({"device": "cpu", "nodes": 1,
      "device_profile": "absent.json"})");
  s = parseCluster(missing, c);
  EXPECT_NE(s.message().find("key 'device_profile': "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("absent.json"), std::string::npos) << s.message();
}

TEST(PlanCostModel, MeasuredConstantsPriceTheStep) {
  GptModel m;
  ASSERT_TRUE(parseModelSpec("gpt:layers=4,hidden=256,heads=8,seq=64,vocab=256", m).ok());
  Cluster slow, fast;
  slow.device = cpuProfile({2});
  slow.device.devicesPerNode = 2;
  fast = slow;
  fast.device.measured[0].matmul.flopsPerSecond *= 2;
  Candidate c;
  c.data = 2, c.microbatchSize = 8;
  Prediction ps = evaluate(m, slow, c), pf = evaluate(m, fast, c);
  EXPECT_LT(pf.computeTime, ps.computeTime);
  EXPECT_DOUBLE_EQ(pf.dataCommTime, ps.dataCommTime);
  EXPECT_GT(ps.dataCommTime, 0);
  // fp32 on the CPU: 4 + 4 + 8 bytes per parameter.
  EXPECT_NEAR((ps.paramBytes + ps.gradBytes + ps.optimizerBytes) / m.params(), 16, 0.1);
  // Pipelines: ZB-H1's bubble is below 1F1B's, GPipe's equals it.
  c.data = 1, c.pipeline = 2, c.microbatches = 4, c.microbatchSize = 4;
  c.schedule = Schedule::OneFOneB;
  Prediction oneF = evaluate(m, slow, c);
  c.schedule = Schedule::ZeroBubbleH1;
  Prediction zb = evaluate(m, slow, c);
  c.schedule = Schedule::GPipe;
  Prediction gpipe = evaluate(m, slow, c);
  EXPECT_GT(oneF.bubbleTime, 0);
  EXPECT_LT(zb.bubbleTime, oneF.bubbleTime);
  EXPECT_DOUBLE_EQ(gpipe.bubbleTime, oneF.bubbleTime);
  EXPECT_GT(gpipe.activationBytes, oneF.activationBytes);
}

} // namespace
