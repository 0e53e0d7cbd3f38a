// Receives advertised to their co-located sender before their message comes (shm_ops.hpp,
// channel/shm/advert.hpp): posting an advert, retracting the unclaimed ones before a message
// record of that sender is matched, withdrawing one on cancel or failure, and the sender's
// ADVERT_DONE / ADVERT_ABORT, or the `delivered` word a sender's GPU set (and the flag it is given).
#include <algorithm>
#include <string>

#include "base/config.hpp"
#include "base/errors.hpp"
#include "engine/shm_engine.hpp"
#include "engine/shm_ops.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

namespace {
base::Setting<bool> gDeliveredByGpu(
    "CGDR_CUDA_RESIDENT_NOTIFY", "1", "",
    "A receive this rank advertised to a co-located sender may be ended by that sender's resident copy kernel "
    "(CGDR_CUDA_RESIDENT) itself: it sets a word in this rank's shared segment after the copy's fence, which this "
    "rank polls, instead of the sender's record once its CPU has seen the copy done. 0: by the record only (this "
    "rank's senders follow what it announces).");
}  // namespace

std::uint64_t ShmEngine::advertFeatures() { return gDeliveredByGpu.get() ? shm::kFeatureDeliveredWords : 0; }

bool ShmEngine::deliveredFlag(shm::Peer& p, std::uint64_t idx, std::uint64_t len, mem::DoneFlag* f) {
  *f = mem::DoneFlag{};
  char* mapped = segMapped_[p.local];
  if (!(p.features & shm::kFeatureDeliveredWords) || !mapped || len == 0 || len > shm::kDeliveredMax) return false;
  std::uint64_t* word = p.advertsOut.deliveredAt(idx);
  f->host = word;
  f->device = reinterpret_cast<std::uint64_t>(mapped + (reinterpret_cast<char*>(word) - p.segment));
  f->value = shm::deliveredWord(idx, len);
  return true;
}

void ShmEngine::advertise(ShmRecv& r, CtxQueues& q) {
  shm::Peer& p = *r.sourcePeer();
  if (!r.advertisable() || !p.advertsIn.usable() || p.dead) return;
  // A message that could claim r could be taken by an earlier receive that is not advertised.
  for (ShmRecv* o : q.posted) {
    if (o == &r) break;
    if (!o->advert() && o->matches(r.source(), r.tag())) return;
  }
  GpuOffer o;
  if (!r.describeForAdvert(&o)) return;
  std::uint64_t idx = p.advertsIn.post(r.ctx(), r.tag(), r.capacity(), p.seqIn, &o, sizeof o);
  if (!idx) return;
  if (tracing())
    if (std::uint64_t done = p.doneSentNs.exchange(0)) trace(kTrDoneAdvert, done);
  r.setAdvert(idx);
  adverts_[p.local].push_back({idx, &r, false});
  ++stats_.advertised;
}

void ShmEngine::resolveAdverts(shm::Peer& p) {
  auto& live = adverts_[p.local];
  for (auto it = live.begin(); it != live.end();) {
    if (it->claimed) {
      ++it;
      continue;
    }
    if (p.advertsIn.retract(it->idx)) {
      if (it->recv) it->recv->setAdvert(0);  // an ordinary posted receive again, in its place
      p.advertsIn.release(it->idx);
      it = live.erase(it);
      ++stats_.advertsRetracted;
      continue;
    }
    it->claimed = true;  // matched by a send of p: its bytes are on their way
    if (it->recv) {
      unpost(it->recv);
      it->recv->claimedBy(p);
    }
    ++it;
  }
}

bool ShmEngine::withdrawAdvert(ShmRecv* r, bool forget) {
  shm::Peer* p = r->sourcePeer();
  if (!p) return true;
  auto& live = adverts_[p->local];
  for (auto it = live.begin(); it != live.end(); ++it) {
    if (it->recv != r) continue;
    if (!it->claimed && p->advertsIn.retract(it->idx)) {
      p->advertsIn.release(it->idx);
      live.erase(it);
      r->setAdvert(0);
      ++stats_.advertsRetracted;
      return true;
    }
    if (!it->claimed) {
      it->claimed = true;
      if (!forget) {
        unpost(r);
        r->claimedBy(*p);
      }
    }
    if (forget) {
      it->recv = nullptr;
      r->setAdvert(0);
    }
    return false;
  }
  r->setAdvert(0);
  return true;
}

// ADVERT_DONE / ADVERT_ABORT: the sender that claimed advert c.msgId delivered (or could not);
// byWord: an ADVERT_DONE read from the advert's `delivered` word (drainDelivered).
void ShmEngine::advertEnded(shm::Peer& p, const shm::CtlRecord& c, bool byWord) {
  auto& live = adverts_[p.local];
  auto it = std::find_if(live.begin(), live.end(), [&](const LiveAdvert& a) { return a.idx == c.msgId; });
  if (it == live.end()) {
    breakPeer(p, "delivery into a buffer that was not advertised to it");
    return;
  }
  ShmRecv* r = it->recv;
  bool noticed = it->claimed;
  p.advertsIn.release(it->idx);
  live.erase(it);
  if (!r) return;
  r->setAdvert(0);
  if (!noticed) {
    unpost(r);
    r->claimedBy(p);
  }
  if (static_cast<shm::CtlType>(c.type) == shm::CtlType::kAdvertDone) {
    ++stats_.advertsClaimed;
    if (byWord) ++stats_.advertsDelivered;
    traceDoneSeen(p, c.sentNs);
    r->onAdvertDone(p, c.len);
  } else {
    r->fail(base::Status(base::Errc::kCuda, "co-located rank " + std::to_string(p.worldRank) +
                                                " could not copy the message's GPU data"));
  }
}

// A sender's GPU set the `delivered` word of one of p's live adverts (the bytes are fenced in the
// buffer before it): that advert ends as with ADVERT_DONE, no record follows.
bool ShmEngine::drainDelivered(shm::Peer& p) {
  auto& live = adverts_[p.local];
  bool any = false;
  for (std::size_t i = 0; i < live.size();) {
    std::uint64_t len = 0;
    int d = p.advertsIn.delivered(live[i].idx, &len);
    if (d < 0) break;  // not claimed: the sender claims in order, nor any later one
    if (d == 0) {
      ++i;
      continue;
    }
    shm::CtlRecord c{};
    c.type = static_cast<std::uint32_t>(shm::CtlType::kAdvertDone);
    c.msgId = live[i].idx;
    c.len = len;
    advertEnded(p, c, true);  // (erases live[i])
    any = true;
    if (p.dead) break;
  }
  return any;
}

}  // namespace cgdr::engine
