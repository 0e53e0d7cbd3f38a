// PollPass: what one poll pass over cgdr's copies remembers (a copy found unfinished makes every
// later copy of its stream unfinished for the rest of the pass; earlier ones are still asked;
// copies seen done are counted per stream).
#include <gtest/gtest.h>

#include "mem/gpu_copy.hpp"

using cgdr::mem::PollPass;

TEST(PollPass, LaterCopiesOfAStreamFollowItsOldestUnfinished) {
  PollPass p;
  EXPECT_FALSE(p.knownPending(3, 10));
  p.notePending(3, 10);
  EXPECT_TRUE(p.knownPending(3, 10));
  EXPECT_TRUE(p.knownPending(3, 11));
  EXPECT_FALSE(p.knownPending(3, 9)) << "an earlier copy may have finished";
  EXPECT_FALSE(p.knownPending(2, 11)) << "another stream knows nothing of it";
  p.notePending(3, 7);  // an earlier one found unfinished: the mark moves back
  EXPECT_TRUE(p.knownPending(3, 7));
  EXPECT_TRUE(p.knownPending(3, 9));
  p.notePending(3, 20);  // a later one changes nothing
  EXPECT_FALSE(p.knownPending(3, 6));
  EXPECT_TRUE(p.knownPending(3, 8));
}

TEST(PollPass, StreamsBeyondItsMemoryAreAlwaysAsked) {
  PollPass p;
  for (int s = 0; s < 64; ++s) p.notePending(s, 100);
  int remembered = 0;
  for (int s = 0; s < 64; ++s) {
    EXPECT_FALSE(p.knownPending(s, 99));
    remembered += p.knownPending(s, 100);
  }
  EXPECT_GE(remembered, 4);
  EXPECT_LT(remembered, 64) << "a fixed-size pass cannot remember every stream";
  for (int s = 0; s < remembered; ++s) EXPECT_TRUE(p.knownPending(s, 1000));  // the first ones are kept
  // A stream it cannot remember never counts as having had a second copy done.
  EXPECT_EQ(p.noteDone(63), 1);
  EXPECT_EQ(p.noteDone(63), 1);
}

TEST(PollPass, CountsCopiesSeenDonePerStream) {
  PollPass p;
  EXPECT_EQ(p.noteDone(5), 1);
  EXPECT_EQ(p.noteDone(6), 1);
  EXPECT_EQ(p.noteDone(5), 2);
  EXPECT_FALSE(p.knownPending(5, 1)) << "done copies mark nothing pending";
  p.notePending(5, 9);
  EXPECT_TRUE(p.knownPending(5, 9));
  EXPECT_EQ(p.noteDone(5), 3);
  EXPECT_EQ(p.noteDone(6), 2);
}
