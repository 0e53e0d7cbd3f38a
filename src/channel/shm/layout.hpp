// The shared-memory layout of the shm channel. Each co-located rank owns one segment holding the
// rings it receives on (one message ring and one control ring per co-located sender, itself
// included) and the bulk chunks it sends large messages through. Everything here is read by other
// processes: readers validate what they use.
#pragma once
#include <cstddef>
#include <cstdint>

namespace cgdr::channel::shm {

constexpr std::uint64_t kSegmentMagic = 0x70656e6f52444743ull;  // "CGDRonep"
constexpr std::uint32_t kLayoutVersion = 8;
constexpr std::size_t kLine = 64;

// Records on a message ring.
enum class RecType : std::uint16_t { kPad = 1, kEager = 2, kRts = 3 };
enum RecFlags : std::uint16_t {
  kFlagSync = 1,  // the sender completes only once the message is matched (MPI_Ssend)
  kFlagGpu = 2,   // rendezvous of GPU bytes: an offer (engine's GpuOffer, 144 bytes) follows
};

// Envelope of a message (and the header of every record on a message ring).
struct alignas(kLine) MsgHeader {
  std::uint32_t len;    // record bytes: header + payload, a multiple of 64
  std::uint16_t type;   // RecType
  std::uint16_t flags;  // RecFlags
  std::int32_t ctx;     // communicator context
  std::int32_t src;     // sender's rank in that communicator
  std::int32_t tag;
  std::uint32_t seq;    // per (sender, receiver) sequence number, checked on receipt
  std::uint64_t size;   // message bytes
  std::uint64_t msgId;  // sender's id of the message, named by control records
  std::uint64_t addr;   // rendezvous: sender's address of the packed bytes (single copy)
  std::uint64_t sentNs;  // CGDR_TRACE_GPU: when the sender wrote it (CLOCK_MONOTONIC ns; 0: untraced)
  // Written last (release): the record's ring position XOR the ring's key. The receiver polls
  // the stamp of the next record itself, so a message costs it one cache-line transfer.
  std::uint64_t stamp;
};
static_assert(sizeof(MsgHeader) == 64);

// Control records (fixed 64 bytes) on a control ring.
enum class CtlType : std::uint32_t {
  kCts = 1,         // receiver matched a rendezvous: stream `len` bytes through the chunks
  kFin = 2,         // receiver copied `len` bytes itself (single copy): the sender is done
  kAck = 3,         // receiver matched a synchronous eager message
  kData = 4,        // sender: chunk `chunk` holds bytes [offset, offset+len) of message msgId
  kCancelReq = 5,   // sender asks to withdraw an unmatched message
  kCancelOk = 6,    // receiver withdrew it
  kCancelFail = 7,  // receiver had matched it already
  kDevData = 8,     // sender: block `chunk` of its cuMem ring (id `ring`, at byte `slotOffset`) holds the bytes
  kAbortSend = 9,   // sender: the stream of msgId failed on its side (the receive fails)
  kAbortRecv = 10,  // receiver: the receive of msgId failed on its side (the send fails)
  kPushed = 11,     // sender: it copied `len` bytes into the receiver's GPU buffer (push): done
  kAdvertDone = 12,   // sender: it claimed the receiver's advert `msgId` and copied `len` bytes into its buffer
  kAdvertAbort = 13,  // sender: it claimed advert `msgId` but could not copy (the receive fails)
};
struct alignas(kLine) CtlRecord {
  std::uint32_t type;
  std::uint32_t chunk;
  std::uint64_t msgId;   // the sender's message id
  std::uint64_t offset;
  std::uint64_t len;
  std::uint64_t mode;    // kCts: how the sender streams (StreamMode); kPush: `chunk` is the
                         // receiver's description slot describing its buffer (the engine's GpuOffer)
  std::uint64_t ring;    // kDevData: id of the sender's ring (as shared over the cuMem link)
  std::uint64_t slotOffset;  // kDevData: byte offset of the block in that ring
  std::uint64_t sentNs;      // CGDR_TRACE_GPU: when the sender wrote it (0: untraced)
};
// How a sender streams after a CTS. kPush: the sender copies into the receiver's GPU buffer
// itself, which the receiver describes in one of its description slots (DescSlot).
enum class StreamMode : std::uint64_t { kHostChunks = 0, kDevRing = 1, kPush = 2 };
static_assert(sizeof(CtlRecord) == 64);

// A 64-bit counter alone on its cache line.
struct alignas(kLine) Counter {
  std::uint64_t value;
  char pad[kLine - sizeof(std::uint64_t)];
};

// Ring indices are monotonic byte (or slot) counters; only the producer writes tail, only the
// consumer writes head and consumed. Message rings leave tail unused: each record carries a stamp
// (its position XOR the ring's key) that the consumer polls instead.
struct RingHeader {
  Counter tail;
  Counter head;
  Counter consumed;  // message rings: eager bytes the receiver has matched (the sender's credit)
};
static_assert(sizeof(RingHeader) == 3 * kLine);

struct alignas(kLine) ChunkFlag {
  std::uint32_t busy;  // 1 while a receiver still has to copy the chunk out
  char pad[kLine - sizeof(std::uint32_t)];
};

// Segment header, written once by its owner before the first collective step of wire-up.
struct alignas(kLine) SegmentHeader {
  std::uint64_t magic;
  std::uint64_t nonce;
  std::uint32_t version;
  std::int32_t worldRank;
  std::uint32_t localCount;
  std::uint32_t ringBytes;
  std::uint32_t ctlSlots;
  std::uint32_t chunks;
  std::uint32_t chunkBytes;
  std::int32_t pid;          // in the owner's PID namespace (single copy within one namespace)
  std::uint64_t probeAddr;   // address of probeValue in the owner's memory (single-copy probe)
  std::uint64_t probeValue;
  std::uint64_t lockHeld;    // 1: the owner holds a lock on its segment file (liveness can be probed)
  std::uint64_t devSlots;    // blocks of the owner's cuMem staging ring (their flags are here)
  std::uint64_t descSlots;   // description slots (DescSlot)
  std::uint64_t features;    // kFeature* bits: what the owner does beyond the layout
};
// The owner polls its adverts' `delivered` words (advert.hpp): a sender may end an advert by
// setting one instead of sending ADVERT_DONE.
constexpr std::uint64_t kFeatureDeliveredWords = 1;
static_assert(sizeof(SegmentHeader) == 2 * kLine);

// Receives posted before their message came, advertised by the receiver to one co-located sender
// (advert.hpp): the sender may claim the oldest one and copy straight into the buffer it describes.
// Per (receiver, sender) pair, in the receiver's segment.
constexpr std::uint32_t kAdvertSlots = 64;
constexpr std::size_t kAdvertPayload = 152;
enum class AdvertState : std::uint64_t { kPosted = 1, kClaimed = 2, kRetracted = 3 };
struct alignas(kLine) AdvertSlot {
  // (idx << 2) | AdvertState, accessed atomically: the receiver posts and retracts, the sender
  // claims (compare-and-swap from kPosted). 0: never used.
  std::uint64_t state;
  std::int32_t ctx, tag;
  std::uint64_t capacity;  // bytes the receive can hold
  std::uint32_t seq;       // the receiver had taken the sender's message records up to seq (exclusive)
  std::uint32_t payloadBytes;
  // Written by the sender that claimed the advert (or by its GPU) once the bytes are in the buffer,
  // instead of an ADVERT_DONE record: AdvertBoard::delivered() / deliveredWord() in advert.hpp.
  std::uint64_t delivered;
  char payload[kAdvertPayload];  // what the engine says about the buffer (its GpuOffer)
};
static_assert(sizeof(AdvertSlot) == 3 * kLine);

// A receiver's description of its GPU buffer for a sender that copies into it (a CTS of mode
// kPush names the slot): the receiver takes a free slot, writes the description and sends the
// CTS; the sender copies the description out and frees the slot (busy = 0, release) at once,
// whatever becomes of the message; with no slot free the receiver pulls instead. (Described in a
// bulk chunk each, as before layout 6, a window of such receives found the chunks held by the
// host rail's tails and pulled: docs/performance.md, forty-fourth session.)
// In the receiver's segment, shared by all its senders (only the receiver marks slots busy).
constexpr std::size_t kDescPayload = 192;
struct alignas(kLine) DescSlot {
  std::uint32_t busy;
  char pad[kLine - sizeof(std::uint32_t)];
  char payload[kDescPayload];
};
static_assert(sizeof(DescSlot) == 4 * kLine);

// Sizes of one segment's parts for a given configuration.
struct Geometry {
  std::uint32_t localCount, ringBytes, ctlSlots, chunks, chunkBytes;
  std::uint32_t devSlots;  // flags of the blocks of this rank's cuMem staging ring
  std::uint32_t descSlots;  // description slots (DescSlot)

  std::size_t msgRingStride() const { return sizeof(RingHeader) + ringBytes; }
  std::size_t ctlRingStride() const { return sizeof(RingHeader) + std::size_t{ctlSlots} * sizeof(CtlRecord); }
  std::size_t msgRingOffset(std::uint32_t sender) const { return sizeof(SegmentHeader) + sender * msgRingStride(); }
  std::size_t ctlRingOffset(std::uint32_t sender) const {
    return msgRingOffset(localCount) + sender * ctlRingStride();
  }
  std::size_t advertOffset(std::uint32_t sender) const {
    return ctlRingOffset(localCount) + std::size_t{sender} * kAdvertSlots * sizeof(AdvertSlot);
  }
  std::size_t flagsOffset() const { return advertOffset(localCount); }
  std::size_t devFlagsOffset() const { return flagsOffset() + std::size_t{chunks} * sizeof(ChunkFlag); }
  std::size_t descOffset() const { return devFlagsOffset() + std::size_t{devSlots} * sizeof(ChunkFlag); }
  std::size_t chunkOffset(std::uint32_t c) const {
    return descOffset() + std::size_t{descSlots} * sizeof(DescSlot) + std::size_t{c} * chunkBytes;
  }
  std::size_t total() const { return chunkOffset(chunks); }
};

}  // namespace cgdr::channel::shm
