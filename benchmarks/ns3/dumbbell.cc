// The bufferlab dumbbell in ns-3, for the side-by-side benchmark (benchmarks/bench_ns3.py).
//
// N senders, each on its own access link to router L; one bottleneck L -> R; N receivers, each on
// its own access link from R. Every flow is one BulkSend over TCP to a PacketSink. Every setting
// that differs between ns-3's defaults and bufferlab's comes from the command line, so that the
// Python side can pass the same values it puts into the bufferlab spec (see --PrintHelp).
//
// Queues: bufferlab's FIFO of N packets holds N packets besides the one being transmitted. ns-3's
// PointToPointNetDevice takes a packet from its own device queue to transmit it, and the traffic-
// control layer keeps the device queue filled from the queue disc: a FifoQueueDisc of N - 1
// packets plus a device queue of 1 packet holds the same N. Every device gets this pair (access
// links with --accessQueue packets, bufferlab's default 1000p), so ns-3's default FqCoDel is
// never installed. --qdisc installs another queue disc at the bottleneck instead (an AQM twin:
// --qdisc=ns3::CoDelQueueDisc --qdiscAttributes=Target=5ms,Interval=100ms,MaxSize=999p), over the
// same one-packet device queue.
//
// Routing: senders sit in 10.1.0.0/16, receivers in 10.2.0.0/16, so each router needs one static
// route across the bottleneck (global routing would run Dijkstra over 2000 nodes).
//
// Output: one JSON line with, over the whole run: per-flow goodput (bytes received by the sink),
// the bottleneck's busy time (sum of packet transmission times, PPP header included), queue-disc
// and device drops (the queue disc's also by ns-3's drop reason), the time integral of the bottleneck queue (queue disc + device queue, in
// packets), retransmitted segments (TcpSocketBase "Retransmission") and RTOs (entries into
// CA_LOSS), and the wall time of the build and of Simulator::Run; and, to explain gaps, the mean
// state of a sender as it enters fast recovery (flight, RFC 6675 pipe, cwnd, and the ssthresh it
// sets, in segments); with --sampleInterval, the run sampled in time ("samples": received bytes,
// queue-disc drops, marks and length, each sender's cwnd and ssthresh), to split it into phases.
//
// --traceFlows=3,8 writes a per-packet trace of those senders (0-based, as bufferlab numbers its
// flows) to stderr, or to --traceFile, up to --traceUntil: one line per event, the time in seconds
// and the sender first, sequence numbers as 0-based segment indices ((seq - 1) / segmentSize),
// windows in segments:
//   tx T FLOW SEG new|retx              a data segment leaves the sender
//   cwnd T FLOW SEGMENTS / ssthresh T FLOW SEGMENTS / inflight T FLOW SEGMENTS (BytesInFlight)
//   state T FLOW OPEN|DISORDER|CWR|RECOVERY|LOSS
//   pacing T FLOW MBPS                  the socket's pacing rate changed (a controller that paces)
//   drop T FLOW SEG REASON              the bottleneck queue disc dropped it (ns-3's reason string)
//   fq T FLOW PACKETS QDELAY_MS         every --traceInterval: the packets in the flow's own queue
//                                       (a flow-queue disc's class) and, if the class is a PIE, its
//                                       delay estimate (the last dequeued packet's sojourn), else -
//
// --variants=TcpBbr,TcpCubic gives flows their own controllers (flow 0 first; the rest take
// --variant), for mixes such as one BBR flow against CUBIC flows.
//
// --variant=TcpNewRenoHalfCwnd is a diagnostic NewReno (not a bufferlab setting): ns-3's NewReno
// takes ssthresh from BytesInFlight(), which with SACK is pipe, not FlightSize; this one halves
// cwnd, the window a greedy sender has in flight when the first duplicate ACK arrives.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace ns3
{

/// NewReno whose congestion events set ssthresh = max(2 SMSS, cwnd / 2) (see the header comment).
class TcpNewRenoHalfCwnd : public TcpNewReno
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TcpNewRenoHalfCwnd")
                                .SetParent<TcpNewReno>()
                                .SetGroupName("Internet")
                                .AddConstructor<TcpNewRenoHalfCwnd>();
        return tid;
    }

    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t) override
    {
        return std::max(2 * tcb->m_segmentSize, tcb->m_cWnd.Get() / 2);
    }

    Ptr<TcpCongestionOps> Fork() override
    {
        return CopyObject<TcpNewRenoHalfCwnd>(this);
    }
};

NS_OBJECT_ENSURE_REGISTERED(TcpNewRenoHalfCwnd);

} // namespace ns3

namespace
{

/// The bottleneck's counters, updated by trace sinks.
struct Bottleneck
{
    DataRate rate;
    double busySeconds = 0;
    uint64_t queuedPackets = 0;      // queue disc + device queue, now
    double queuePacketSeconds = 0;   // time integral of queuedPackets
    Time lastChange = Seconds(0);
    uint32_t discPackets = 0;
    uint32_t devicePackets = 0;

    void Integrate()
    {
        Time now = Simulator::Now();
        queuePacketSeconds += static_cast<double>(discPackets + devicePackets) *
                              (now - lastChange).GetSeconds();
        lastChange = now;
    }
};

Bottleneck g_bottleneck;
uint64_t g_retransmissions = 0;
uint64_t g_rtos = 0;
uint64_t g_lossEpisodes = 0;

void
OnTransmit(Ptr<const Packet> packet)
{
    g_bottleneck.busySeconds += g_bottleneck.rate.CalculateBytesTxTime(packet->GetSize()).GetSeconds();
}

void
OnDiscLength(uint32_t, uint32_t now)
{
    g_bottleneck.Integrate();
    g_bottleneck.discPackets = now;
}

void
OnDeviceLength(uint32_t, uint32_t now)
{
    g_bottleneck.Integrate();
    g_bottleneck.devicePackets = now;
}

void
OnRetransmission(Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
                 Ptr<const TcpSocketBase>)
{
    ++g_retransmissions;
}

/// One sender's latest traced values, for the recovery-entry means.
struct Sender
{
    Ptr<TcpSocketBase> socket;
    uint32_t cwnd = 0;
    uint32_t ssthresh = 0;
    SequenceNumber32 highTx;
};

std::vector<Sender> g_senders;

/// Sums over entries into fast recovery, in bytes (divided by the segment size on output).
struct RecoveryEntries
{
    uint64_t count = 0;
    double flight = 0;   // highest sequence sent - SND.UNA (RFC 5681 FlightSize)
    double pipe = 0;     // TcpTxBuffer::BytesInFlight (RFC 6675 pipe, head already marked lost)
    double cwnd = 0;     // before the reduction
    double ssthresh = 0; // as set on entry
};

RecoveryEntries g_recoveryEntries;

/// EnterRecovery traces the state change before it computes ssthresh: read ssthresh once the
/// current event is over.
void
CountRecoveryEntry(uint32_t sender)
{
    g_recoveryEntries.ssthresh += g_senders[sender].ssthresh;
}

void
OnCongState(uint32_t sender, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_LOSS)
    {
        ++g_lossEpisodes; // only the retransmission timer enters CA_LOSS, once per episode
    }
    if (now == TcpSocketState::CA_RECOVERY)
    {
        const Sender& s = g_senders[sender];
        Ptr<TcpTxBuffer> sent = s.socket->GetTxBuffer();
        ++g_recoveryEntries.count;
        g_recoveryEntries.flight += s.highTx - sent->HeadSequence();
        g_recoveryEntries.pipe += sent->BytesInFlight();
        g_recoveryEntries.cwnd += s.cwnd;
        Simulator::ScheduleNow(&CountRecoveryEntry, sender);
    }
}

void
OnCwnd(uint32_t sender, uint32_t, uint32_t now)
{
    g_senders[sender].cwnd = now;
}

void
OnSsthresh(uint32_t sender, uint32_t, uint32_t now)
{
    g_senders[sender].ssthresh = now;
}

void
OnHighTx(uint32_t sender, SequenceNumber32, SequenceNumber32 now)
{
    g_senders[sender].highTx = now;
}

/// Every expiry of the retransmission timer backs the RTO off: RTO = min(2 RTO, 60 s) (RFC 6298
/// 5.5). An RTT sample never doubles it exactly, so a doubling counts one timeout, repeated
/// timeouts of the same segment included (as bufferlab counts them).
void
OnRto(Time before, Time now)
{
    if (now == Min(before * 2, Seconds(60)) && now != before)
    {
        ++g_rtos;
    }
}

/// The per-packet trace of some senders (--traceFlows; see the header comment).
struct PacketTrace
{
    std::FILE* out = nullptr;
    std::vector<bool> traced; // by sender index
    Time until;
    uint32_t segmentSize = 1448;
    std::map<uint32_t, uint32_t> senderByAddress; // sender's IPv4 address -> sender index
    Ptr<QueueDisc> disc;                          // the bottleneck's
    Time interval;

    bool On(uint32_t sender) const
    {
        return out && sender < traced.size() && traced[sender] && Simulator::Now() <= until;
    }

    /// The 0-based segment index of sequence number `seq` (data starts at 1).
    uint64_t Segment(SequenceNumber32 seq) const
    {
        return (seq.GetValue() - 1) / segmentSize;
    }

    void Line(const char* event, uint32_t sender, const std::string& rest) const
    {
        std::fprintf(out, "%s %.9f %u %s\n", event, Simulator::Now().GetSeconds(), sender, rest.c_str());
    }
};

PacketTrace g_trace;

void
TraceTx(uint32_t sender, Ptr<const Packet> packet, const TcpHeader& header, Ptr<const TcpSocketBase>)
{
    if (!g_trace.On(sender) || packet->GetSize() == 0)
    {
        return;
    }
    // The socket raises its highest sequence only after this trace: below it is a retransmission.
    bool retx = header.GetSequenceNumber() < g_senders[sender].highTx;
    g_trace.Line("tx",
                 sender,
                 std::to_string(g_trace.Segment(header.GetSequenceNumber())) + (retx ? " retx" : " new"));
}

void
TraceWindow(const char* event, uint32_t sender, uint32_t, uint32_t now)
{
    if (g_trace.On(sender))
    {
        g_trace.Line(event, sender, std::to_string(static_cast<double>(now) / g_trace.segmentSize));
    }
}

void
TraceCwnd(uint32_t sender, uint32_t before, uint32_t now)
{
    TraceWindow("cwnd", sender, before, now);
}

void
TracePacingRate(uint32_t sender, DataRate, DataRate now)
{
    if (g_trace.On(sender))
    {
        g_trace.Line("pacing", sender, std::to_string(now.GetBitRate() / 1e6));
    }
}

void
TraceSsthresh(uint32_t sender, uint32_t before, uint32_t now)
{
    TraceWindow("ssthresh", sender, before, now);
}

void
TraceInFlight(uint32_t sender, uint32_t before, uint32_t now)
{
    TraceWindow("inflight", sender, before, now);
}

void
TraceCongState(uint32_t sender, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    static const char* names[] = {"OPEN", "DISORDER", "CWR", "RECOVERY", "LOSS"};
    if (g_trace.On(sender) && now < 5)
    {
        g_trace.Line("state", sender, names[now]);
    }
}

/// The sender of a queued TCP/IPv4 packet, or none for one of another host.
std::optional<uint32_t>
SenderOf(Ptr<const QueueDiscItem> item)
{
    auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (!ip)
    {
        return std::nullopt;
    }
    auto found = g_trace.senderByAddress.find(ip->GetHeader().GetSource().Get());
    if (found == g_trace.senderByAddress.end())
    {
        return std::nullopt;
    }
    return found->second;
}

void
TraceDrop(Ptr<const QueueDiscItem> item, const char* reason)
{
    auto sender = SenderOf(item);
    TcpHeader header;
    if (!sender || !g_trace.On(*sender) || item->GetPacket()->PeekHeader(header) == 0)
    {
        return;
    }
    g_trace.Line("drop",
                 *sender,
                 std::to_string(g_trace.Segment(header.GetSequenceNumber())) + " \"" + reason + "\"");
}

/// Every trace interval: the traced senders' own queues in a flow-queue disc. A class holds one
/// flow's packets (flows hash to distinct queues here); its flow is learnt from its head packet.
void
SampleFlowQueues(std::shared_ptr<std::map<uint32_t, uint32_t>> flowOfClass)
{
    if (Simulator::Now() > g_trace.until)
    {
        return;
    }
    for (uint32_t k = 0; k < g_trace.disc->GetNQueueDiscClasses(); ++k)
    {
        Ptr<QueueDisc> child = g_trace.disc->GetQueueDiscClass(k)->GetQueueDisc();
        if (Ptr<const QueueDiscItem> head = child->GetNInternalQueues() ? child->GetInternalQueue(0)->Peek() : nullptr)
        {
            if (auto sender = SenderOf(head))
            {
                (*flowOfClass)[k] = *sender;
            }
        }
        auto known = flowOfClass->find(k);
        if (known == flowOfClass->end() || !g_trace.On(known->second))
        {
            continue;
        }
        std::string delay = "-";
        if (auto pie = DynamicCast<PieQueueDisc>(child))
        {
            delay = std::to_string(pie->GetQueueDelay().GetSeconds() * 1e3);
        }
        g_trace.Line("fq", known->second, std::to_string(child->GetNPackets()) + " " + delay);
    }
    Simulator::Schedule(g_trace.interval, &SampleFlowQueues, flowOfClass);
}

/// BulkSend creates its socket when it starts; hook the socket's traces right after.
void
HookSocket(Ptr<BulkSendApplication> app)
{
    Ptr<TcpSocketBase> socket = DynamicCast<TcpSocketBase>(app->GetSocket());
    NS_ABORT_MSG_UNLESS(socket, "BulkSend has no TCP socket yet");
    socket->TraceConnectWithoutContext("Retransmission", MakeCallback(&OnRetransmission));
    socket->TraceConnectWithoutContext("RTO", MakeCallback(&OnRto));
    auto sender = static_cast<uint32_t>(g_senders.size());
    g_senders.push_back(Sender{socket});
    socket->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, sender));
    socket->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnCwnd, sender));
    socket->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&OnSsthresh, sender));
    socket->TraceConnectWithoutContext("HighestSequence", MakeBoundCallback(&OnHighTx, sender));
    if (g_trace.out && sender < g_trace.traced.size() && g_trace.traced[sender])
    {
        socket->TraceConnectWithoutContext("Tx", MakeBoundCallback(&TraceTx, sender));
        socket->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&TraceCwnd, sender));
        socket->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&TraceSsthresh, sender));
        socket->TraceConnectWithoutContext("BytesInFlight", MakeBoundCallback(&TraceInFlight, sender));
        socket->TraceConnectWithoutContext("CongState", MakeBoundCallback(&TraceCongState, sender));
        socket->TraceConnectWithoutContext("PacingRate", MakeBoundCallback(&TracePacingRate, sender));
    }
}

/// A FifoQueueDisc of packets - 1 over a one-packet device queue: bufferlab's FIFO of `packets`.
QueueDiscContainer
InstallFifo(NetDeviceContainer devices, uint32_t packets)
{
    TrafficControlHelper tc;
    tc.SetRootQueueDisc("ns3::FifoQueueDisc",
                        "MaxSize",
                        QueueSizeValue(QueueSize(std::to_string(packets - 1) + "p")));
    return tc.Install(devices);
}

/// The queue disc `type` with the attributes `attributes` ("Name=value,Name=value"), the way a
/// bufferlab AQM's twin gives it: set as the type's defaults, which only this disc uses.
QueueDiscContainer
InstallQueueDisc(NetDeviceContainer devices, const std::string& type, const std::string& attributes)
{
    std::stringstream pairs(attributes);
    std::string pair;
    while (std::getline(pairs, pair, ','))
    {
        auto equals = pair.find('=');
        NS_ABORT_MSG_IF(equals == std::string::npos, "--qdiscAttributes: expected Name=value, got " << pair);
        Config::SetDefault(type + "::" + pair.substr(0, equals), StringValue(pair.substr(equals + 1)));
    }
    TrafficControlHelper tc;
    tc.SetRootQueueDisc(type);
    return tc.Install(devices);
}

/// A JSON object of a queue disc's drops by ns-3's reason (before enqueue and after dequeue).
std::string
DropReasons(const QueueDisc::Stats& stats)
{
    std::string out;
    for (const auto* reasons : {&stats.nDroppedPacketsBeforeEnqueue, &stats.nDroppedPacketsAfterDequeue})
    {
        for (const auto& [reason, count] : *reasons)
        {
            out += (out.empty() ? "\"" : ", \"") + reason + "\": " + std::to_string(count);
        }
    }
    return "{" + out + "}";
}

/// Samples of the run every --sampleInterval, to split it in time: [t, bytes received by all
/// sinks, queue-disc drops, queue-disc marks, packets in the queue disc, [cwnd], [ssthresh]]
/// (windows in segments, an initial ssthresh as -1).
struct Sampler
{
    Time interval;
    uint32_t segmentSize = 1448;
    std::vector<Ptr<PacketSink>> sinks;
    Ptr<QueueDisc> disc;
    std::string out;

    void Sample()
    {
        uint64_t received = 0;
        for (const auto& sink : sinks)
        {
            received += sink->GetTotalRx();
        }
        std::string cwnd;
        std::string ssthresh;
        for (std::size_t i = 0; i < g_senders.size(); ++i)
        {
            const Sender& s = g_senders[i];
            bool initial = s.ssthresh == 0 || s.ssthresh == std::numeric_limits<uint32_t>::max();
            cwnd += (i ? "," : "") + std::to_string(s.cwnd / segmentSize);
            ssthresh += (i ? "," : "") + (initial ? std::string("-1") : std::to_string(s.ssthresh / segmentSize));
        }
        const QueueDisc::Stats& stats = disc->GetStats();
        out += (out.empty() ? "[" : ", [") + std::to_string(Simulator::Now().GetSeconds()) + ", " +
               std::to_string(received) + ", " + std::to_string(stats.nTotalDroppedPackets) + ", " +
               std::to_string(stats.nTotalMarkedPackets) + ", " + std::to_string(disc->GetNPackets()) +
               ", [" + cwnd + "], [" + ssthresh + "]]";
        Simulator::Schedule(interval, &Sampler::Sample, this);
    }
};

Sampler g_sampler;

} // namespace

int
main(int argc, char* argv[])
{
    auto wallStart = std::chrono::steady_clock::now();

    uint32_t flows = 10;
    std::string bottleneckRate = "100Mbps";
    std::string bottleneckDelay = "10ms";
    std::string accessRate = "1Gbps";
    std::string rtt = "40ms";
    uint32_t queuePackets = 100;
    uint32_t accessQueue = 1000;
    uint32_t segmentSize = 1448;
    uint32_t initialCwnd = 10;
    bool sack = true;
    uint32_t delAckCount = 2;
    std::string delAckTimeout = "40ms";
    std::string minRto = "200ms";
    std::string initialRto = "1s";
    std::string clockGranularity = "1ns";
    std::string variant = "TcpNewReno";
    std::string variants = "";
    std::string recovery = "TcpPrrRecovery";
    bool hystart = false;
    bool timestamps = true;
    bool ecn = false;
    double duration = 30;
    uint32_t seed = 1;
    std::string qdisc = "";
    std::string qdiscAttributes = "";
    std::string sampleInterval = "0s";
    std::string traceFlows = "";
    std::string traceFile = "";
    std::string traceUntil = "2s";
    std::string traceInterval = "15ms";

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of flows", flows);
    cmd.AddValue("bottleneckRate", "bottleneck rate", bottleneckRate);
    cmd.AddValue("bottleneckDelay", "bottleneck one-way delay", bottleneckDelay);
    cmd.AddValue("accessRate", "access link rate", accessRate);
    cmd.AddValue("rtt", "two-way propagation delay of every flow", rtt);
    cmd.AddValue("queue", "bottleneck FIFO in packets (bufferlab's meaning)", queuePackets);
    cmd.AddValue("accessQueue", "access FIFOs in packets (bufferlab's meaning)", accessQueue);
    cmd.AddValue("segmentSize", "TCP payload bytes per segment", segmentSize);
    cmd.AddValue("initialCwnd", "initial window in segments", initialCwnd);
    cmd.AddValue("sack", "SACK", sack);
    cmd.AddValue("delAckCount", "segments per delayed ACK", delAckCount);
    cmd.AddValue("delAckTimeout", "delayed-ACK timeout", delAckTimeout);
    cmd.AddValue("minRto", "minimum RTO", minRto);
    cmd.AddValue("initialRto", "initial RTO (SYN and data)", initialRto);
    cmd.AddValue("clockGranularity", "RTO clock granularity G of RFC 6298", clockGranularity);
    cmd.AddValue("variant", "ns-3 congestion control (TcpNewReno, TcpLinuxReno, TcpCubic, ...)", variant);
    cmd.AddValue("variants",
                 "per-flow congestion control, comma-separated, flow 0 first (e.g. TcpBbr,TcpCubic); flows "
                 "beyond the list take --variant",
                 variants);
    cmd.AddValue("recovery", "TcpPrrRecovery or TcpClassicRecovery", recovery);
    cmd.AddValue("hystart", "HyStart in TcpCubic's slow start", hystart);
    cmd.AddValue("timestamps",
                 "RFC 7323 timestamps (ns-3 then measures RTT from their echo, in whole milliseconds; "
                 "false: from each segment's send time, to the nanosecond)",
                 timestamps);
    cmd.AddValue("ecn", "ECN-capable TCP (RFC 3168) on every socket; the qdisc marks with UseEcn=true", ecn);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("seed", "RNG run number", seed);
    cmd.AddValue("qdisc", "bottleneck queue disc type instead of the FIFO (e.g. ns3::CoDelQueueDisc)", qdisc);
    cmd.AddValue("qdiscAttributes", "its attributes, Name=value,Name=value", qdiscAttributes);
    cmd.AddValue("sampleInterval",
                 "sample received bytes, queue-disc drops, marks and length, and each sender's cwnd "
                 "and ssthresh this often into the JSON's \"samples\" (0s: none)",
                 sampleInterval);
    cmd.AddValue("traceFlows", "senders to trace packet by packet (0-based, comma-separated)", traceFlows);
    cmd.AddValue("traceFile", "where the trace goes (default stderr)", traceFile);
    cmd.AddValue("traceUntil", "the trace's end", traceUntil);
    cmd.AddValue("traceInterval", "the period of the trace's flow-queue samples", traceInterval);
    cmd.Parse(argc, argv);
    NS_ABORT_MSG_UNLESS(queuePackets >= 2 && accessQueue >= 2, "queues need at least 2 packets");

    if (!traceFlows.empty())
    {
        g_trace.out = traceFile.empty() ? stderr : std::fopen(traceFile.c_str(), "w");
        NS_ABORT_MSG_UNLESS(g_trace.out, "--traceFile: cannot write " << traceFile);
        g_trace.traced.assign(flows, false);
        std::stringstream list(traceFlows);
        std::string item;
        while (std::getline(list, item, ','))
        {
            uint32_t sender = std::stoul(item);
            NS_ABORT_MSG_UNLESS(sender < flows, "--traceFlows: no sender " << sender);
            g_trace.traced[sender] = true;
        }
        g_trace.until = Time(traceUntil);
        g_trace.interval = Time(traceInterval);
        g_trace.segmentSize = segmentSize;
    }

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + variant));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", StringValue("ns3::" + recovery));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segmentSize));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initialCwnd));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAckCount));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Time(delAckTimeout)));
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Time(initialRto)));
    // bufferlab's receive window is unlimited: buffers far above any window these runs reach.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1u << 26));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1u << 26));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(timestamps));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Time(minRto)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(Time(clockGranularity)));
    Config::SetDefault("ns3::RttEstimator::InitialEstimation", TimeValue(Time(initialRto)));
    Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(hystart));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(ecn ? "On" : "Off"));

    NodeContainer routers;
    routers.Create(2);
    NodeContainer senders;
    senders.Create(flows);
    NodeContainer receivers;
    receivers.Create(flows);
    InternetStackHelper stack;
    stack.InstallAll();
    // --variants: each listed flow's sender node gets its own socket type.
    {
        std::istringstream list(variants);
        std::string item;
        for (uint32_t i = 0; i < flows && std::getline(list, item, ','); ++i)
        {
            senders.Get(i)->GetObject<TcpL4Protocol>()->SetAttribute(
                "SocketType",
                TypeIdValue(TypeId::LookupByName("ns3::" + item)));
        }
    }

    Time oneWay = Time(rtt) / 2;
    Time accessDelay = (oneWay - Time(bottleneckDelay)) / 2;
    NS_ABORT_MSG_UNLESS(accessDelay.IsPositive(), "rtt/2 must exceed the bottleneck delay");

    PointToPointHelper link;
    link.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize("1p")));

    link.SetDeviceAttribute("DataRate", StringValue(bottleneckRate));
    link.SetChannelAttribute("Delay", StringValue(bottleneckDelay));
    NetDeviceContainer bottleneckDevices = link.Install(routers.Get(0), routers.Get(1));
    QueueDiscContainer bottleneckDiscs = qdisc.empty()
                                             ? InstallFifo(bottleneckDevices, queuePackets)
                                             : InstallQueueDisc(bottleneckDevices, qdisc, qdiscAttributes);
    Ipv4AddressHelper address("10.0.0.0", "255.255.255.252");
    Ipv4InterfaceContainer bottleneckAddresses = address.Assign(bottleneckDevices);

    link.SetDeviceAttribute("DataRate", StringValue(accessRate));
    link.SetChannelAttribute("Delay", TimeValue(accessDelay));
    Ipv4AddressHelper senderAddresses("10.1.0.0", "255.255.255.252");
    Ipv4AddressHelper receiverAddresses("10.2.0.0", "255.255.255.252");
    Ipv4StaticRoutingHelper routing;
    std::vector<Ipv4Address> sinks;
    for (uint32_t i = 0; i < flows; ++i)
    {
        NetDeviceContainer left = link.Install(senders.Get(i), routers.Get(0));
        InstallFifo(left, accessQueue);
        Ipv4InterfaceContainer leftAddresses = senderAddresses.Assign(left);
        g_trace.senderByAddress[leftAddresses.GetAddress(0).Get()] = i;
        senderAddresses.NewNetwork();
        routing.GetStaticRouting(senders.Get(i)->GetObject<Ipv4>())
            ->SetDefaultRoute(leftAddresses.GetAddress(1), 1);

        NetDeviceContainer right = link.Install(routers.Get(1), receivers.Get(i));
        InstallFifo(right, accessQueue);
        Ipv4InterfaceContainer rightAddresses = receiverAddresses.Assign(right);
        receiverAddresses.NewNetwork();
        routing.GetStaticRouting(receivers.Get(i)->GetObject<Ipv4>())
            ->SetDefaultRoute(rightAddresses.GetAddress(0), 1);
        sinks.push_back(rightAddresses.GetAddress(1));
    }
    routing.GetStaticRouting(routers.Get(0)->GetObject<Ipv4>())
        ->AddNetworkRouteTo("10.2.0.0", "255.255.0.0", bottleneckAddresses.GetAddress(1), 1);
    routing.GetStaticRouting(routers.Get(1)->GetObject<Ipv4>())
        ->AddNetworkRouteTo("10.1.0.0", "255.255.0.0", bottleneckAddresses.GetAddress(0), 1);

    const uint16_t port = 5000;
    Time stop = Seconds(duration);
    std::vector<Ptr<PacketSink>> sinkApps;
    for (uint32_t i = 0; i < flows; ++i)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(receivers.Get(i));
        sinkApp.Start(Seconds(0));
        sinkApps.push_back(DynamicCast<PacketSink>(sinkApp.Get(0)));

        BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(sinks[i], port));
        source.SetAttribute("SendSize", UintegerValue(segmentSize * 16));
        ApplicationContainer sourceApp = source.Install(senders.Get(i));
        sourceApp.Start(Seconds(0));
        sourceApp.Stop(stop);
        Simulator::Schedule(NanoSeconds(1),
                            &HookSocket,
                            DynamicCast<BulkSendApplication>(sourceApp.Get(0)));
    }

    Ptr<PointToPointNetDevice> bottleneckDevice =
        DynamicCast<PointToPointNetDevice>(bottleneckDevices.Get(0));
    g_bottleneck.rate = DataRate(bottleneckRate);
    bottleneckDevice->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&OnTransmit));
    bottleneckDevice->GetQueue()->TraceConnectWithoutContext("PacketsInQueue",
                                                             MakeCallback(&OnDeviceLength));
    Ptr<QueueDisc> bottleneckDisc = bottleneckDiscs.Get(0);
    bottleneckDisc->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&OnDiscLength));
    if (g_trace.out)
    {
        g_trace.disc = bottleneckDisc;
        bottleneckDisc->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&TraceDrop));
        bottleneckDisc->TraceConnectWithoutContext("DropAfterDequeue", MakeCallback(&TraceDrop));
        Simulator::Schedule(g_trace.interval,
                            &SampleFlowQueues,
                            std::make_shared<std::map<uint32_t, uint32_t>>());
    }

    if (Time(sampleInterval).IsStrictlyPositive())
    {
        g_sampler.interval = Time(sampleInterval);
        g_sampler.segmentSize = segmentSize;
        g_sampler.sinks = sinkApps;
        g_sampler.disc = bottleneckDisc;
        Simulator::Schedule(g_sampler.interval, &Sampler::Sample, &g_sampler);
    }

    auto runStart = std::chrono::steady_clock::now();
    Simulator::Stop(stop);
    Simulator::Run();
    auto runEnd = std::chrono::steady_clock::now();
    g_bottleneck.Integrate();

    uint64_t discDrops = bottleneckDisc->GetStats().nTotalDroppedPackets;
    uint64_t discMarks = bottleneckDisc->GetStats().nTotalMarkedPackets;
    uint64_t deviceDrops = bottleneckDevice->GetQueue()->GetTotalDroppedPackets();
    std::string goodput;
    for (uint32_t i = 0; i < flows; ++i)
    {
        goodput += (i ? "," : "") + std::to_string(sinkApps[i]->GetTotalRx());
    }
    // Each sender's window and slow-start threshold at the end, in segments (the threshold as
    // -1 while it is still the initial "infinite" one): where the flows stand after a transient.
    std::string finalCwnd;
    std::string finalSsthresh;
    for (std::size_t i = 0; i < g_senders.size(); ++i)
    {
        const Sender& s = g_senders[i];
        finalCwnd += (i ? "," : "") + std::to_string(s.cwnd / segmentSize);
        bool initial = s.ssthresh == 0 || s.ssthresh == std::numeric_limits<uint32_t>::max();
        finalSsthresh += (i ? "," : "") + (initial ? std::string("-1") : std::to_string(s.ssthresh / segmentSize));
    }
    auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    const RecoveryEntries& r = g_recoveryEntries;
    double perEntry = r.count ? 1.0 / (static_cast<double>(r.count) * segmentSize) : 0.0;
    std::printf("{\"simulator\": \"ns-3 %s\", \"duration_s\": %.9g, \"flow_bytes_received\": [%s], "
                "\"bottleneck_busy_s\": %.9g, \"queue_drops\": %llu, \"queue_drop_reasons\": %s, "
                "\"device_drops\": %llu, \"queue_marks\": %llu, "
                "\"queue_packet_s\": %.9g, \"retransmissions\": %llu, \"rtos\": %llu, "
                "\"loss_episodes\": %llu, \"fast_recoveries\": %llu, "
                "\"recovery_entry_segments\": {\"flight\": %.3f, \"pipe\": %.3f, "
                "\"cwnd\": %.3f, \"ssthresh\": %.3f}, "
                "\"final_cwnd_segments\": [%s], \"final_ssthresh_segments\": [%s], "
                "\"build_wall_s\": %.6f, \"run_wall_s\": %.6f%s}\n",
                "3.44",
                duration,
                goodput.c_str(),
                g_bottleneck.busySeconds,
                static_cast<unsigned long long>(discDrops),
                DropReasons(bottleneckDisc->GetStats()).c_str(),
                static_cast<unsigned long long>(deviceDrops),
                static_cast<unsigned long long>(discMarks),
                g_bottleneck.queuePacketSeconds,
                static_cast<unsigned long long>(g_retransmissions),
                static_cast<unsigned long long>(g_rtos),
                static_cast<unsigned long long>(g_lossEpisodes),
                static_cast<unsigned long long>(r.count),
                r.flight * perEntry,
                r.pipe * perEntry,
                r.cwnd * perEntry,
                r.ssthresh * perEntry,
                finalCwnd.c_str(),
                finalSsthresh.c_str(),
                seconds(wallStart, runStart),
                seconds(runStart, runEnd),
                g_sampler.out.empty() ? "" : (", \"samples\": [" + g_sampler.out + "]").c_str());
    Simulator::Destroy();
    if (g_trace.out && g_trace.out != stderr)
    {
        std::fclose(g_trace.out);
    }
    return 0;
}
