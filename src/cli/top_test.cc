// tx top's frame, from data made here: what it shows, its colours only when asked for, and how
// it fits a terminal's width and height.

#include "cli/top.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tx::cli {
namespace {

using nlohmann::json;

constexpr Millis kNow = 1'800'000'000'000;

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Visible characters of a line (escapes skipped; code points).
std::size_t Visible(const std::string& line) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e && line[i] != '[')) ++i;
      continue;
    }
    n += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
  }
  return n;
}

TopData Pool(int slots, int events) {
  TopData d;
  d.store = "/srv/.tx/tx.db";
  d.now = {kNow, std::nullopt};
  json list = json::array();
  for (int i = 1; i <= slots; ++i) {
    std::string n = std::to_string(i);
    list.push_back({{"slot", "slot-" + n},
                    {"state", "running"},
                    {"pid", 1000 + i},
                    {"restarts", 0},
                    {"worker_id", "worker-0000000" + n.substr(0, 1)},
                    {"worker_status", i == 1 ? "busy" : "idle"},
                    {"task_id", i == 1 ? json("task-aaaaaaaa") : json(nullptr)},
                    {"heartbeat_age_ms", 400}});
  }
  d.pool = {{"id", "host:/srv/.tx"},
            {"status", "running"},
            {"pid", 999},
            {"hostname", "build-1"},
            {"uptime_ms", 300'000},
            {"desired", slots},
            {"max_workers", 10},
            {"live", slots},
            {"slots", list},
            {"queue", {{"ready", 3}, {"running", 1}, {"done", 12}, {"failed", 2}}},
            {"last_reconcile_at", kNow - 12'000},
            {"last_report", {{"dead_workers", 1}}}};
  Worker hand;
  hand.id = "worker-byhand01";
  hand.name = "by-hand";
  hand.hostname = "laptop";
  hand.pid = 4242;
  hand.status = WorkerStatus::kIdle;
  hand.heartbeat_interval_ms = 30'000;
  hand.last_heartbeat_at = kNow - 1'000;
  d.workers.push_back(hand);
  for (int i = 1; i <= events; ++i) {
    Event e;
    e.id = i;
    e.type = i % 2 == 0 ? "task.done" : "task.failed";
    e.at = kNow - (events - i) * 1000;
    e.task_id = "task-aaaaaaaa";
    e.data = {{"n", i}};
    d.events.push_back(e);
  }
  return d;
}

TEST(TopFrame, ShowsThePoolTheOtherWorkersTheQueueAndTheNewestEventsFirst) {
  std::string frame = Join(RenderTop(Pool(2, 3), TopView{}));
  EXPECT_TRUE(Contains(frame, "tx top — /srv/.tx/tx.db — ")) << frame;
  EXPECT_TRUE(Contains(frame, "orchestrator: running (pid 999 on build-1, up 5m)")) << frame;
  EXPECT_TRUE(Contains(frame, "pool: 2 running of 2 wanted (max 10)")) << frame;
  EXPECT_TRUE(Contains(frame, "queue: ready 3 · running 1 · done 12 · failed 2\n")) << frame;
  EXPECT_TRUE(Contains(frame, "last reconcile: 12s ago — dead workers 1")) << frame;
  EXPECT_TRUE(Contains(frame, "slot-1")) << frame;
  EXPECT_TRUE(Contains(frame, "task-aaaaaaaa")) << frame;
  EXPECT_TRUE(Contains(frame, "other live workers:")) << frame;
  EXPECT_TRUE(Contains(frame, "worker-byhand01")) << frame;
  ASSERT_NE(frame.find("\n1  "), std::string::npos) << frame;
  EXPECT_LT(frame.find("\n3  "), frame.find("\n1  ")) << "newest first: " << frame;
  // Numbers of different widths line up.
  std::string twelve = Join(RenderTop(Pool(1, 12), TopView{}));
  EXPECT_TRUE(Contains(twelve, "\n12  ")) << twelve;
  EXPECT_TRUE(Contains(twelve, "\n 9  ")) << twelve;
  EXPECT_FALSE(Contains(frame, "every")) << "one frame names no interval";
  EXPECT_FALSE(Contains(frame, "\x1b")) << "no colour unless asked for";
}

TEST(TopFrame, ColoursTheStatesOnlyWhenAskedFor) {
  TopView view;
  view.colour = true;
  view.interval = 1000;
  std::string frame = Join(RenderTop(Pool(2, 2), view));
  EXPECT_TRUE(Contains(frame, "\x1b[32mbusy\x1b[0m")) << frame;
  EXPECT_TRUE(Contains(frame, "\x1b[31mtask.failed\x1b[0m")) << frame;
  EXPECT_TRUE(Contains(frame, "\x1b[36mready\x1b[0m 3")) << frame;
  EXPECT_TRUE(Contains(frame, "every 1s, Ctrl-C quits")) << frame;
}

TEST(TopFrame, TextFromTheStoreCannotCarryEscapes) {
  TopData d = Pool(1, 1);
  d.workers[0].name = "evil\x1b[2Jname";
  d.events[0].type = "task.\x1b]0;title\x07";
  d.store = "/tmp/\x1b[31m.db";
  std::string frame = Join(RenderTop(d, TopView{}));
  EXPECT_FALSE(Contains(frame, "\x1b")) << frame;
  EXPECT_TRUE(Contains(frame, "evil\\x1b[2Jname")) << frame;
}

TEST(TopFrame, FitsTheWidthAndTheHeightKeepingTheNewestEvents) {
  TopView view;
  view.colour = true;
  view.width = 50;
  view.height = 24;
  std::vector<std::string> frame = RenderTop(Pool(30, 40), view);
  EXPECT_LE(frame.size(), 24u);
  for (const auto& line : frame) EXPECT_LE(Visible(line), 50u) << line;
  std::string all = Join(frame);
  EXPECT_TRUE(Contains(all, "more slots")) << all;
  EXPECT_TRUE(Contains(all, "\n40  ")) << "the newest event is shown: " << all;
  EXPECT_FALSE(Contains(all, "\n 1  ")) << "the oldest is not: " << all;
  EXPECT_TRUE(Contains(all, "…")) << all;
}

TEST(TopFrame, WithoutAnOrchestratorTheLiveWorkersAreListed) {
  TopData d = Pool(0, 0);
  d.pool = {{"status", "stopped"}, {"pid", 0}, {"slots", json::array()}, {"queue", json::object()}};
  std::string frame = Join(RenderTop(d, TopView{}));
  EXPECT_TRUE(Contains(frame, "orchestrator: stopped\n")) << frame;
  EXPECT_TRUE(Contains(frame, "queue: empty")) << frame;
  EXPECT_TRUE(Contains(frame, "live workers:")) << frame;
  EXPECT_TRUE(Contains(frame, "events: none yet")) << frame;
}

TEST(FitWidth, CutsVisibleCharactersKeepsEscapesAndResets) {
  EXPECT_EQ(FitWidth("short", 10), "short");
  EXPECT_EQ(FitWidth("anything", 0), "anything");
  EXPECT_EQ(FitWidth("abcdefgh", 5), "abcd…");
  EXPECT_EQ(FitWidth("\x1b[32mhello\x1b[0m world", 7), "\x1b[32mhello\x1b[0m …\x1b[0m");
  EXPECT_EQ(FitWidth("héllo wörld", 6), "héllo…");
}

TEST(StateColour, NamesAColourForEachState) {
  EXPECT_EQ(StateColour("running"), "32");
  EXPECT_EQ(StateColour("failed"), "31");
  EXPECT_EQ(StateColour("ready"), "36");
  EXPECT_EQ(StateColour("waiting"), "33");
  EXPECT_EQ(StateColour("cancelled"), "2");
  EXPECT_EQ(StateColour("whatever"), "");
}

}  // namespace
}  // namespace tx::cli
