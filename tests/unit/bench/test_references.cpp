#include <gtest/gtest.h>

#include "daqflow/bench/references.hpp"
#include "daqflow/bench/runners.hpp"

namespace daqflow::bench {
namespace {

TEST(ReferenceParse, Iperf3ReceiverBandwidth) {
  const auto mb_s = parse_iperf3_json(
      "{\"start\": {}, \"end\": {\"sum_sent\": {\"bits_per_second\": 1.6e10}, "
      "\"sum_received\": {\"bits_per_second\": 3.2e10}}}\n");
  ASSERT_TRUE(mb_s) << mb_s.error().message();
  EXPECT_DOUBLE_EQ(*mb_s, 4000);
  auto error = parse_iperf3_json("{\"error\": \"unable to connect to server\"}");
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message().find("unable to connect"), std::string::npos);
  EXPECT_FALSE(parse_iperf3_json("iperf3: error"));
}

TEST(ReferenceParse, SockperfOneWayLatencies) {
  const char* out =
      "sockperf: [Valid Duration] RunTime=0.550 sec; SentMessages=39996; ReceivedMessages=39996\n"
      "sockperf: \x1b[2;35m====> avg-latency=6.854 (std-dev=1.399)\x1b[0m\n"
      "sockperf: Summary: Latency is 6.854 usec\n"
      "sockperf: ---> <MAX> observation =  266.062\n"
      "sockperf: ---> percentile 99.000 =    5.009\n"
      "sockperf: ---> percentile 50.000 =    3.332\n"
      "sockperf: ---> <MIN> observation =    3.235\n";
  const auto lat = parse_sockperf(out);
  ASSERT_TRUE(lat) << lat.error().message();
  EXPECT_DOUBLE_EQ(lat->min_us, 3.235);
  EXPECT_DOUBLE_EQ(lat->median_us, 3.332);
  EXPECT_DOUBLE_EQ(lat->avg_us, 6.854);
  EXPECT_FALSE(parse_sockperf("sockperf: Summary: Latency is 6.854 usec\n"));
}

TEST(ReferenceParse, UcxPerftestFinalLineInMegabytes) {
  const char* out =
      "|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |\n"
      "[thread 0]              1986      0.215   507.575   507.575     1970.15    1970.15   1970  "
      "1970\n"
      "Final:                  2000      0.215   771.216   509.420     1296.65    1963.02   1297  "
      "1963\n";
  const auto p = parse_ucx_perftest(out);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_NEAR(p->bandwidth_mb_s, 1963.02 * 1.048576, 1e-9);
  EXPECT_DOUBLE_EQ(p->latency_typical_us, 0.215);
  EXPECT_DOUBLE_EQ(p->latency_avg_us, 771.216);
  EXPECT_FALSE(parse_ucx_perftest("[thread 0] 1986 0.2\n"));
}

TEST(ReferenceParse, FiPingpongResultRow) {
  const char* out =
      "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n"
      "1m      200     =200     400m        4.24s     98.84   10609.13       0.00\n";
  const auto p = parse_fi_pingpong(out);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_DOUBLE_EQ(p->mb_s, 98.84);
  EXPECT_DOUBLE_EQ(p->usec_per_xfer, 10609.13);
  EXPECT_FALSE(parse_fi_pingpong("1m 200 =200 400m 4.24s 98.84 10609.13 0.00\n"));
}

TEST(ReferenceParse, BandwidthTableRowOfTheSize) {
  const char* out =
      "# size  MB/s\n"
      "65536   3000.5\n"
      "1048576 4000.25\n";
  const auto mb_s = parse_bandwidth_table(out, 1048576);
  ASSERT_TRUE(mb_s) << mb_s.error().message();
  EXPECT_DOUBLE_EQ(*mb_s, 4000.25);
  EXPECT_FALSE(parse_bandwidth_table(out, 4096));
}

TEST(ReferenceParse, BandwidthTableUnderMpirunTagOutput) {
  const char* out =
      "[1,0]<stdout>:# mpi_bw: 64 MPI_Isend in flight\n"
      "[1,0]<stdout>:1048576 13127.36\n";
  const auto mb_s = parse_bandwidth_table(out, 1048576);
  ASSERT_TRUE(mb_s) << mb_s.error().message();
  EXPECT_DOUBLE_EQ(*mb_s, 13127.36);
}

TEST(ReferenceParse, JsonLineNumber) {
  const char* out =
      "fi_bw: no wait object on this provider's queue: -c yield\n"
      "{\"provider\": \"shm\", \"message_bytes\": 1048576, \"mb_s\": 5123.4}\n";
  const auto mb_s = parse_json_number(out, "mb_s");
  ASSERT_TRUE(mb_s) << mb_s.error().message();
  EXPECT_DOUBLE_EQ(*mb_s, 5123.4);
  EXPECT_FALSE(parse_json_number(out, "gbit_per_s"));
}

TEST(ReferenceTool, EachTransportHasItsReference) {
  EXPECT_EQ(*reference_tool("tcp", "stream"), "iperf3");
  EXPECT_EQ(*reference_tool("tcp", "latency"), "sockperf");
  EXPECT_EQ(*reference_tool("shm", "memcpy"), "memcpy");
  EXPECT_EQ(*reference_tool("inproc", "stream"), "memcpy");
  EXPECT_EQ(*reference_tool("ucx", "stream"), "ucx_perftest");
  EXPECT_EQ(*reference_tool("ofi", "latency"), "fabtests");
  EXPECT_EQ(*reference_tool("mpi", "stream"), "mpi_bw");
  auto none = reference_tool("inproc", "latency");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("inproc"), std::string::npos);
  EXPECT_FALSE(reference_tool("tcp", "jitter"));
}

// --reference-err-handling names its result files apart and is in the command that reproduces
// them, so that the two ucx_perftest figures are never confused.
TEST(ReferenceTool, ErrorHandlingIsInTheStemAndTheCommand) {
  CompareOptions o;
  o.cluster.transport = "ucx";
  o.kind = "stream";
  o.size = 1048576;
  EXPECT_EQ(compare_stem(o), "compare-stream-ucx-1048576");
  EXPECT_EQ(command_line(o).find("--reference-err-handling"), std::string::npos);
  o.reference_err_handling = true;
  EXPECT_EQ(compare_stem(o), "compare-stream-ucx-ucx_perftest-e-1048576");
  EXPECT_NE(command_line(o).find(" --reference-err-handling"), std::string::npos);
}

// Each option that changes what the reference does is in the stem, so that ucp_am_bw with five
// buffers and error handling, mpi_bw with eight and plain ucx_perftest never share files.
TEST(ReferenceTool, BuffersAndErrorHandlingTogetherAreBothInTheStem) {
  CompareOptions o;
  o.cluster.transport = "ucx";
  o.kind = "stream";
  o.size = 1048576;
  o.reference = "ucp_am_bw";
  EXPECT_EQ(compare_stem(o), "compare-stream-ucx-ucp_am_bw-1048576");
  o.reference_buffers = 5;
  EXPECT_EQ(compare_stem(o), "compare-stream-ucx-ucp_am_bw-5buffers-1048576");
  o.reference_err_handling = true;
  EXPECT_EQ(compare_stem(o), "compare-stream-ucx-ucp_am_bw-5buffers-e-1048576");
  const std::string cmd = command_line(o);
  EXPECT_NE(cmd.find(" --reference ucp_am_bw --reference-buffers 5 --reference-err-handling"),
            std::string::npos)
      << cmd;
  CompareOptions mpi;
  mpi.cluster.transport = "mpi";
  mpi.kind = "stream";
  mpi.size = 1048576;
  mpi.reference_buffers = 8;  // mpi_bw, the transport's own reference
  EXPECT_EQ(compare_stem(mpi), "compare-stream-mpi-mpi_bw-8buffers-1048576");
}

TEST(Memcpy, MeasuresAPositiveBandwidth) {
  EXPECT_GT(measure_memcpy_mb_s(65536, 0.02), 0);
  EXPECT_EQ(measure_memcpy_mb_s(0, 0.02), 0);
}

}  // namespace
}  // namespace daqflow::bench
