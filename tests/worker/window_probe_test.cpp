#include "internal/worker/window_probe.h"

#include <algorithm>
#include <deque>

#include <gtest/gtest.h>

namespace autonous::worker {
namespace {

// A server that counts `ratio` of the raw estimate, plus `hidden` tokens of its own, and cuts
// every prompt to `window`.
struct Server {
  double ratio = 0.5;
  int64_t window = 0;  // 0: none
  int64_t hidden = 0;
  int64_t whole(int64_t raw) const {
    return hidden + static_cast<int64_t>(ratio * static_cast<double>(raw));
  }
  int64_t count(int64_t raw) const {
    return window > 0 ? std::min(whole(raw), window) : whole(raw);
  }
};

TEST(WindowProbeTest, NothingTakenWholeLeavesTheRawEstimatesRoom) {
  WindowProbe p;
  EXPECT_FALSE(p.cap("k", 8000, 1.0));  // not lowered (or raised): nothing to cap
  EXPECT_FALSE(p.cap("k", 8000, 1.3));
  EXPECT_EQ(p.cap("k", 8000, 0.6), 4800);  // the raw estimate's 8 000 cost 4 800 now
  EXPECT_FALSE(p.cap("k", 0, 0.6));
  EXPECT_FALSE(p.cap("k", 8000, 0.0));
}

TEST(WindowProbeTest, AChatsFirstAnswerIsBelievedOnlyForAKnownWindow) {
  WindowProbe p;
  EXPECT_FALSE(p.observe("k", "a", 8000, 4000, false).whole);
  EXPECT_EQ(p.proven("k"), 0);
  EXPECT_TRUE(p.observe("k", "b", 8000, 4000, true).whole);
  EXPECT_EQ(p.proven("k"), 8000);
}

TEST(WindowProbeTest, ACountThatGrowsWithTheChatIsWholeAndWidensTheCap) {
  WindowProbe p;
  const Server s;
  EXPECT_FALSE(p.observe("k", "c", 8000, s.count(8000), false).whole);
  // The first growth sets the chat's marginal ratio (judged by the average: whole here).
  EXPECT_TRUE(p.observe("k", "c", 8400, s.count(8400), false).whole);
  EXPECT_TRUE(p.observe("k", "c", 8800, s.count(8800), false).whole);
  EXPECT_EQ(p.proven("k"), 8800);
  EXPECT_EQ(p.cap("k", 8000, 0.5), 5500);      // 0.5 × 1.25 × 8 800
  EXPECT_EQ(p.cap("other", 8000, 0.5), 4000);  // per endpoint and model
  // A compaction: smaller than a prompt of this chat taken whole.
  EXPECT_TRUE(p.observe("k", "c", 3000, s.count(3000), false).whole);
  EXPECT_TRUE(p.observe("k", "c", 3010, s.count(3010), false).whole);
  // Another chat: growth too small to judge, nothing of it taken whole yet: not whole.
  EXPECT_FALSE(p.observe("k", "d", 3000, s.count(3000), false).whole);
  EXPECT_FALSE(p.observe("k", "d", 3010, s.count(3010), false).whole);
  EXPECT_TRUE(p.observe("k", "d", 3500, s.count(3500), false).whole);  // its first growth
  EXPECT_TRUE(p.observe("k", "d", 4000, s.count(4000), false).whole);
}

// A chat growing by `step` raw tokens a turn against `server`: how many answers were cut before
// the window was learned, and whether a cut answer was ever taken as whole by more than the
// shortfall the rule allows.
struct Growth {
  std::optional<int64_t> learned;
  int cut = 0;
  int cut_whole = 0;
  double worst_whole_kept = 1.0;  // of the prompt, on an answer taken whole
};

Growth grow(WindowProbe& p, const Server& server, int64_t start, int64_t step, int turns) {
  Growth r;
  for (int64_t i = 0, raw = start; i < turns && !r.learned; ++i, raw += step) {
    const int64_t c = server.count(raw);
    const auto v = p.observe("k", "c", raw, c, false);
    const bool cut = c < server.whole(raw);
    r.cut += cut ? 1 : 0;
    if (v.whole && cut) {
      ++r.cut_whole;
      r.worst_whole_kept = std::min(
          r.worst_whole_kept, static_cast<double>(c) / static_cast<double>(server.whole(raw)));
    }
    r.learned = v.window;
  }
  return r;
}

TEST(WindowProbeTest, ASlowlyGrowingChatPastASilentWindowIsCaughtWithinThreeAnswers) {
  // The review's case: +300 raw a turn (3–4 % of the prompt), a window of 4 096.
  WindowProbe p;
  const Server ollama{0.5, 4096};
  const Growth r = grow(p, ollama, 4000, 300, 60);
  ASSERT_TRUE(r.learned);
  EXPECT_EQ(*r.learned, 4096);
  EXPECT_LE(r.cut, 3);
  // At most the first cut answer was taken whole, and it lost under a turn's growth.
  EXPECT_LE(r.cut_whole, 1);
  EXPECT_GE(r.worst_whole_kept, 0.98);
}

TEST(WindowProbeTest, AJumpingChatPastASilentWindowIsCaughtToo) {
  WindowProbe p;
  const Server ollama{0.5, 4096};
  const Growth r = grow(p, ollama, 2000, 2000, 20);
  ASSERT_TRUE(r.learned);
  EXPECT_LE(r.cut, 3);
  EXPECT_EQ(r.cut_whole, 0);
}

TEST(WindowProbeTest, HonestServersAreNeverJudgedCut) {
  WindowProbe p;
  // A proxy's hidden system prompt of 1 500 tokens.
  EXPECT_FALSE(grow(p, Server{0.5, 0, 1500}, 2000, 300, 60).learned);
  // Chats of different content, interleaved: Chinese (0.62 of the raw estimate) and code (0.445).
  const Server chinese{0.62};
  const Server code{0.445};
  for (int64_t raw = 2000; raw < 20000; raw += 700) {
    EXPECT_FALSE(p.observe("m", "zh", raw, chinese.count(raw), false).window);
    EXPECT_FALSE(p.observe("m", "code", raw + 350, code.count(raw + 350), false).window);
  }
  // One chat that turns from English (0.51) to Russian (0.21 of the raw estimate) for good: its
  // counts no longer lower the estimate (not whole), and no window is seen.
  int64_t raw = 4000;
  int64_t count = 2040;
  p.observe("r", "c", raw, count, false);
  for (int i = 0; i < 20; ++i) {
    raw += 400;
    count += i < 2 ? 204 : static_cast<int64_t>(0.21 * 400);
    EXPECT_FALSE(p.observe("r", "c", raw, count, false).window) << i;
  }
  // A proxy's hidden prompt of 1 000 tokens and short turns (the second review's case): the
  // chat's average ratio is far above its marginal one, the counts still rise.
  for (const double ratio : {0.33, 0.40}) {
    WindowProbe q;
    const Growth g = grow(q, Server{ratio, 0, 1000}, 300, 60, 200);
    EXPECT_FALSE(g.learned) << ratio;
  }
}

TEST(WindowProbeTest, CompactionsBetweenStrikesDoNotHideASilentWindow) {
  // The second review's case: the chat crosses 4 096 (partly cut), is cut again (a strike),
  // compacts, grows again below the window (whole turns), crosses again: the second strike at
  // the same count is the window.
  WindowProbe p;
  const Server ollama{0.5, 4096};
  std::optional<int64_t> learned;
  int cut = 0;
  int cut_in_a_row = 0;
  int64_t raw = 6000;
  for (int turn = 0; turn < 60 && !learned; ++turn) {
    const int64_t c = ollama.count(raw);
    const bool was_cut = c < ollama.whole(raw);
    cut += was_cut ? 1 : 0;
    cut_in_a_row = was_cut ? cut_in_a_row + 1 : 0;
    learned = p.observe("k", "c", raw, c, false).window;
    raw = cut_in_a_row == 2 ? 5000 : raw + 900;  // a compaction after two cut answers
  }
  ASSERT_TRUE(learned);
  EXPECT_EQ(*learned, 4096);
  EXPECT_LE(cut, 4);
}

TEST(WindowProbeTest, AnOllamaThatDropsWholeMessagesIsCaught) {
  // Ollama keeps the newest whole messages that fit: its count zig-zags below the window.
  WindowProbe p;
  std::optional<int64_t> learned;
  int cut = 0;
  for (int64_t raw = 4000, turn = 0; turn < 60 && !learned; raw += 500, ++turn) {
    const int64_t whole = raw / 2;
    const int64_t count = whole <= 4096 ? whole : 4096 - (turn * 137) % 300;
    cut += count < whole ? 1 : 0;
    learned = p.observe("k", "c", raw, count, false).window;
  }
  ASSERT_TRUE(learned);
  EXPECT_LE(cut, 5);  // 4 here: a rising zig-zag looks like growth, a falling one like a cut
}

TEST(WindowProbeTest, CountsOfTheUncachedPartOnlyTeachNothing) {
  // A server that reports only the part of the prompt not in its cache: about the newest turn.
  WindowProbe p;
  for (int64_t raw = 600; raw < 30000; raw += 300) {
    const auto v = p.observe("k", "c", raw, 150, false);
    EXPECT_FALSE(v.window) << raw;
    if (raw > 1000) {
      EXPECT_FALSE(v.whole) << raw;
    }
  }
  EXPECT_EQ(p.cap("k", 8000, 0.5), 4000);
}

TEST(WindowProbeTest, ImplausibleCountsTeachNothing) {
  WindowProbe p;
  EXPECT_FALSE(p.observe("k", "c", 1000, 0, true).whole);
  EXPECT_FALSE(p.observe("k", "c", 1000, 1, true).whole);
  EXPECT_FALSE(p.observe("k", "c", 1000, 2001, true).whole);  // over twice the raw estimate
  EXPECT_FALSE(p.observe("k", "c", 1000, 100, true).whole);   // under 0.15 of it
  EXPECT_FALSE(p.observe("k", "c", 0, 500, true).whole);
  EXPECT_EQ(p.proven("k"), 0);
}

TEST(WindowProbeTest, ChatsGrowthTakenWholeImpliesWhatTheServerAdds) {
  // A proxy that adds 1 000 tokens to a server counting 0.4 of the raw estimate; two chats
  // growing in turn.
  WindowProbe p;
  const Server proxy{0.4, 0, 1000};
  int judged = 0;
  int on_line = 0;
  for (int64_t raw = 800; raw <= 3000; raw += 60) {
    for (const std::string chat : {"c", "d"}) {
      const int64_t r = chat == "c" ? raw : raw + 30;
      const auto v = p.observe("k", chat, r, proxy.count(r), false);
      on_line += v.on_line ? 1 : 0;
      if (v.added) {
        ++judged;
        EXPECT_TRUE(v.whole && v.on_line) << r;
        EXPECT_NEAR(static_cast<double>(*v.added), 1000.0, 5.0) << r;
      }
    }
  }
  EXPECT_GT(judged, 40);
  EXPECT_EQ(judged, on_line - 1);  // the first chat on its line waits for a second
  // An honest server adds nothing: what it implies stays near 0.
  WindowProbe q;
  const Server honest{0.4, 0, 0};
  for (int64_t raw = 800; raw <= 3000; raw += 60) {
    for (const std::string chat : {"c", "d"}) {
      const auto v = q.observe("k", chat, raw, honest.count(raw), false);
      if (v.added) {
        EXPECT_LT(std::abs(*v.added), 5) << raw;
      }
    }
  }
  // A line needs two growths taken whole in a row (the first one here, judged by the chat's
  // average, is not: the part inflates the average), then a span of kAddedSpan and an eighth of
  // the prompt; a compaction starts the chat's line again.
  WindowProbe r;
  EXPECT_FALSE(r.observe("k", "c", 2000, proxy.count(2000), true).on_line);
  EXPECT_FALSE(r.observe("k", "c", 2100, proxy.count(2100), true).on_line);  // its first growth
  EXPECT_FALSE(
      r.observe("k", "c", 2600, proxy.count(2600), true).on_line);  // growth before: not whole
  EXPECT_TRUE(r.observe("k", "c", 2700, proxy.count(2700), true).on_line);
  EXPECT_FALSE(r.observe("k", "c", 1000, proxy.count(1000), true).on_line);  // compacted
  EXPECT_FALSE(r.observe("k", "c", 1100, proxy.count(1100), true).on_line);
  EXPECT_TRUE(r.observe("k", "c", 1400, proxy.count(1400), true).on_line);
}

TEST(WindowProbeTest, TheSpanIsAnEighthOfThePromptAndALineUnderThePartInUseIsNotOne) {
  WindowProbe p;
  const Server honest{0.4, 0, 0};
  EXPECT_FALSE(p.observe("k", "c", 8000, honest.count(8000), true).on_line);
  EXPECT_FALSE(p.observe("k", "c", 8200, honest.count(8200), true).on_line);  // its first growth
  EXPECT_FALSE(p.observe("k", "c", 8400, honest.count(8400), true).on_line);  // 400 < 8 400 / 8
  EXPECT_TRUE(p.observe("k", "c", 9300, honest.count(9300), true).on_line);   // 1 300 >= 9 300 / 8
  // Counted with a part of 1 000 in use, the same line (a part of about none) is not one, but
  // what it implies is among the chats' parts (a low part is the safe side).
  WindowProbe q;
  std::optional<int64_t> reported;
  bool on_line = false;
  for (int64_t raw = 8000; raw <= 12000; raw += 200) {
    for (const std::string chat : {"c", "d"}) {
      const auto v = q.observe("k", chat, raw, honest.count(raw), true, true, 1000);
      on_line = on_line || v.on_line;
      if (v.added) reported = v.added;
    }
  }
  EXPECT_FALSE(on_line);
  ASSERT_TRUE(reported);
  EXPECT_LT(std::abs(*reported), 5);
}

TEST(WindowProbeTest, TheSmallestPartTheLastChatsImpliedIsReported) {
  // One chat's own prefix (a pinned paste that counts more per raw token than its growth) makes
  // its line imply a part no other chat does: the smallest of the chats' parts is reported.
  WindowProbe p;
  const Server pasted{0.4, 0, 600};  // this chat's prefix costs 600 more than its growth says
  const Server plain{0.4, 0, 0};
  std::optional<int64_t> last;
  for (int64_t raw = 800; raw <= 3000; raw += 60) {
    p.observe("k", "pasted", raw, pasted.count(raw), false);
    if (const auto v = p.observe("k", "plain", raw, plain.count(raw), false).added) last = v;
  }
  ASSERT_TRUE(last);
  EXPECT_LT(std::abs(*last), 5);
  const auto from_pasted = p.observe("k", "pasted", 3060, pasted.count(3060), false);
  ASSERT_TRUE(from_pasted.added);
  EXPECT_LT(std::abs(*from_pasted.added), 5);  // its own 600 is not what is reported
}

TEST(WindowProbeTest, AServerThatCutsImpliesNoAddedPart) {
  // Ollama keeps the system prompt and the newest whole messages that fit its window; with turns
  // of uneven size its count falls when a large message is dropped and rises with the next small
  // ones, which look like growth taken whole. Such a count is below what the chat's line
  // reached, or after a growth that was not whole: never on the line. Windows of 2 048 to 8 192,
  // system prompts of 0 to 300 tokens, message sizes of 20 to 2 000, seeded.
  int cut_whole = 0;
  int cut_on_line = 0;
  for (const int64_t window : {2048, 4096, 8192}) {
    for (const int64_t system : {0, 200, 300}) {
      for (uint32_t seed = 1; seed <= 40; ++seed) {
        WindowProbe p;
        std::deque<int64_t> messages;  // raw sizes; the server counts half of each
        int64_t raw = 2 * system;
        uint32_t x = seed * 2654435761U;
        for (int turn = 0; turn < 60; ++turn) {
          x = x * 1664525U + 1013904223U;
          messages.push_back(20 + static_cast<int64_t>((x >> 8) % 1980));
          raw += messages.back();
          int64_t whole = system;
          for (const int64_t m : messages) whole += m / 2;
          int64_t kept = system;
          for (auto it = messages.rbegin(); it != messages.rend() && kept + *it / 2 <= window; ++it)
            kept += *it / 2;
          const auto v = p.observe("k", "c", raw, kept, false);
          if (v.whole && kept < whole) ++cut_whole;
          if (v.on_line && kept < whole) ++cut_on_line;
          if (v.window) break;
        }
      }
    }
  }
  EXPECT_GE(cut_whole, 10);   // the case is met: cut answers that look whole
  EXPECT_EQ(cut_on_line, 0);  // none of them on a chat's line
}

TEST(WindowProbeTest, RequestsThatOfferToolsTeachNoPartAndAFallingCountRestartsTheLine) {
  WindowProbe p;
  const Server proxy{0.4, 0, 1000};
  std::optional<int64_t> with_tools;
  bool tools_on_line = false;
  for (int64_t raw = 800; raw <= 3000; raw += 60) {
    const auto v = p.observe("k", "c", raw, proxy.count(raw), false, /*teach_added=*/false);
    tools_on_line = tools_on_line || v.on_line;
    if (v.added) with_tools = v.added;
    const auto w = p.observe("k", "d", raw, proxy.count(raw), false, /*teach_added=*/false);
    if (w.added) with_tools = w.added;
  }
  EXPECT_TRUE(tools_on_line);  // its line is still judged (a count on it is not a cut)
  EXPECT_FALSE(with_tools);    // but no part is reported from it
  // The proxy stops adding its part: the count falls while the chat grows, the line starts
  // again, and once two chats have new lines the part they imply is about none.
  const Server plain{0.4, 0, 0};
  std::optional<int64_t> after;
  for (int64_t raw = 3060; raw <= 6000; raw += 60) {
    p.observe("k", "c", raw, plain.count(raw), false);
    if (const auto v = p.observe("k", "d", raw, plain.count(raw), false).added) after = v;
  }
  ASSERT_TRUE(after);
  EXPECT_LT(std::abs(*after), 5);
}

TEST(WindowProbeTest, TheCapLeavesRoomForWhatTheServerAdds) {
  WindowProbe p;
  EXPECT_EQ(p.cap("k", 8000, 0.6, 1000), 5800);  // 0.6 × 8 000 + 1 000
  EXPECT_FALSE(p.cap("k", 8000, 0.9, 1000));     // 8 200: not lowered
}

}  // namespace
}  // namespace autonous::worker
