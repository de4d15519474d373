#include "cli/top.h"

#include <algorithm>
#include <map>
#include <set>

#include "cli/print.h"
#include "cli/table.h"
#include "core/duration.h"
#include "core/json.h"

namespace tx::cli {

namespace {

constexpr char kBold[] = "1";

// Task statuses in the order a task goes through them; any other after them.
constexpr std::string_view kQueueOrder[] = {"blocked",  "ready", "running", "waiting",  "review",
                                            "approved", "done",  "failed",  "cancelled"};

std::string Paint(const TopView& view, std::string_view sgr, const std::string& text) {
  if (!view.colour || sgr.empty()) return text;
  return "\x1b[" + std::string(sgr) + "m" + text + "\x1b[0m";
}

// The colour of an event by the last part of its type: task.done, worker.dead, lease.expired.
std::string_view EventColour(std::string_view type) {
  std::string_view last = type.substr(type.rfind('.') + 1);
  static const std::map<std::string_view, std::string_view> kColours = {
      {"done", "32"},    {"approved", "32"},        {"merged", "32"},   {"failed", "31"},
      {"dead", "31"},    {"crashed", "31"},         {"expired", "31"},  {"lost", "31"},
      {"limited", "31"}, {"claimed", "36"},         {"created", "36"},  {"registered", "36"},
      {"started", "36"}, {"requeued", "33"},        {"released", "33"}, {"asked", "33"},
      {"review", "33"},  {"stale_reclaimed", "33"}, {"cancelled", "2"}, {"stopped", "2"}};
  auto it = kColours.find(last);
  return it == kColours.end() ? std::string_view() : it->second;
}

std::string Text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) return "-";
  return it->get<std::string>();
}

// The orchestrator, its pool, the queue and the last reconcile, as tx orchestrator status says
// them.
std::vector<std::string> Head(const TopData& d, const TopView& view) {
  std::vector<std::string> lines;
  std::string title = "tx top — " + Printable(d.store) + " — " + FormatTime(d.now.wall);
  if (view.interval > 0) title += " — every " + FormatDuration(view.interval) + ", Ctrl-C quits";
  lines.push_back(Paint(view, kBold, title));
  if (!d.error.empty()) lines.push_back(Paint(view, "31", "error: " + Printable(d.error)));
  const nlohmann::json& st = d.pool;
  if (!st.is_object()) return lines;
  const Millis now = d.now.wall;
  const std::string state = st.value("status", "stopped");
  const std::int64_t pid = st.value("pid", std::int64_t{0});
  std::string line = "orchestrator: " + Paint(view, StateColour(state), state);
  if (pid > 0) {
    line += " (pid " + std::to_string(pid) + " on " + Printable(st.value("hostname", ""));
    Millis up = st.value("uptime_ms", Millis{0});
    if (up > 0) line += ", up " + FormatDuration(up >= 10'000 ? up / 1000 * 1000 : up / 100 * 100);
    line += ")";
  }
  if (!st.value("slots", nlohmann::json::array()).empty()) {
    line += " — pool: " + std::to_string(st.value("live", 0)) + " running of " +
            std::to_string(st.value("desired", 0)) + " wanted (max " +
            std::to_string(st.value("max_workers", 0)) + ")";
  }
  lines.push_back(line);

  std::map<std::string, std::int64_t> queue;
  if (st.contains("queue") && st["queue"].is_object()) {
    queue = st["queue"].get<std::map<std::string, std::int64_t>>();
  }
  std::string q = "queue:";
  if (queue.empty()) q += " empty";
  std::set<std::string> said;
  auto add = [&](const std::string& status) {
    auto it = queue.find(status);
    if (it == queue.end() || said.contains(status)) return;
    said.insert(status);
    q += (said.size() == 1 ? " " : " · ") + Paint(view, StateColour(status), status) + " " +
         std::to_string(it->second);
  };
  for (std::string_view s : kQueueOrder) add(std::string(s));
  for (const auto& [status, n] : queue) add(status);
  lines.push_back(q);

  const Millis last_at = st.value("last_reconcile_at", Millis{0});
  std::string r = "last reconcile: " + (last_at > 0 ? Age(last_at, now) : std::string("never"));
  const nlohmann::json& report = st.contains("last_report") ? st["last_report"] : nlohmann::json();
  if (report.is_object() && !report.empty()) {
    r += " — dead workers " + std::to_string(report.value("dead_workers", 0)) +
         ", expired leases " + std::to_string(report.value("expired_leases", 0)) +
         ", orphaned tasks " + std::to_string(report.value("orphaned_tasks", 0)) + ", fixed " +
         std::to_string(report.value("inconsistencies_fixed", 0));
  }
  lines.push_back(r);
  return lines;
}

// The pool's slots, as tx orchestrator status shows them.
std::vector<std::string> Slots(const TopData& d, const TopView& view) {
  const nlohmann::json slots =
      d.pool.is_object() ? d.pool.value("slots", nlohmann::json::array()) : nlohmann::json::array();
  if (slots.empty()) return {};
  const Millis now = d.now.wall;
  Table t(
      {"SLOT", "STATE", "PID", "WORKER", "STATUS", "TASK", "HEARTBEAT", "RESTARTS", "LAST EXIT"});
  for (const auto& s : slots) {
    std::string last = Text(s, "failure");
    if (last == "-") last = Text(s, "last_exit");
    std::string state = Text(s, "state");
    Millis next = s.value("next_start_at", Millis{0});
    if (next > 0 && (state == "failed" || state == "backoff")) {
      state +=
          " (next try " +
          (next > now ? "in " + FormatDuration((next - now) / 1000 * 1000) : std::string("now")) +
          ")";
    }
    const nlohmann::json& age = s["heartbeat_age_ms"];
    t.Add({Text(s, "slot"), state, s.value("pid", 0) > 0 ? std::to_string(s.value("pid", 0)) : "-",
           Text(s, "worker_id"), Text(s, "worker_status"), Text(s, "task_id"),
           age.is_number() ? FormatDuration(age.get<Millis>()) + " ago" : "-",
           std::to_string(s.value("restarts", 0)), last});
  }
  return t.Lines(40, [&](std::size_t row, std::size_t col, const std::string& cell) {
    if (!view.colour) return std::string();
    if (row == 0) return std::string(kBold);
    if (col == 1 || col == 4) return std::string(StateColour(cell.substr(0, cell.find(' '))));
    return std::string();
  });
}

// The live workers that no slot of the pool shows: hand-run, remote, another pool's.
std::vector<std::string> OtherWorkers(const TopData& d, const TopView& view) {
  std::set<std::string> in_slots;
  bool pool = false;
  if (d.pool.is_object()) {
    for (const auto& s : d.pool.value("slots", nlohmann::json::array())) {
      pool = true;
      if (s.contains("worker_id") && s["worker_id"].is_string()) in_slots.insert(s["worker_id"]);
    }
  }
  Table t({"WORKER", "NAME", "SLOT", "HOST", "PID", "STATUS", "TASK", "HEARTBEAT"});
  for (const Worker& w : d.workers) {
    if (in_slots.contains(w.id)) continue;
    std::string status(ToString(w.status));
    if (IsStale(w, d.now)) status += " (stale)";
    std::string beat = w.last_heartbeat_at > 0 ? Age(d.now.wall - SilentFor(w, d.now), d.now.wall)
                                               : std::string("never");
    t.Add({w.id, w.name.empty() ? "-" : w.name, w.slot.empty() ? "-" : w.slot,
           w.hostname.empty() ? "-" : w.hostname, w.pid > 0 ? std::to_string(w.pid) : "-", status,
           w.current_task_id.empty() ? "-" : w.current_task_id, beat});
  }
  if (t.empty()) return {};
  std::vector<std::string> lines = {pool ? "other live workers:" : "live workers:"};
  for (std::string& line :
       t.Lines(40, [&](std::size_t row, std::size_t col, const std::string&cell) {
         if (!view.colour) return std::string();
         if (row == 0) return std::string(kBold);
         if (col != 5) return std::string();
         if (cell.find("(stale)") != std::string::npos) return std::string("33");
         return std::string(StateColour(cell));
       })) {
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> Events(const TopData& d, const TopView& view) {
  std::vector<std::string> lines = {d.events.empty() ? "events: none yet"
                                                     : "events (newest first):"};
  // The numbers right-aligned: the newest (first) is the widest.
  const std::size_t id_width = d.events.empty() ? 0 : std::to_string(d.events.back().id).size();
  for (auto it = d.events.rbegin(); it != d.events.rend(); ++it) {
    const Event& e = *it;
    std::string id = std::to_string(e.id);
    std::string time = FormatTime(e.at);
    std::string line = std::string(id_width - std::min(id_width, id.size()), ' ') + id + "  " +
                       time.substr(11, 8) + "  " +
                       Paint(view, EventColour(e.type), Printable(e.type));
    if (!e.task_id.empty()) line += "  " + Printable(e.task_id);
    if (!e.worker_id.empty()) line += "  " + Printable(e.worker_id);
    if (!e.data.empty()) {
      line +=
          "  " + Printable(e.data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

// `lines` cut to at most `room` lines, the last of them saying how many were left out. The first
// line (a table's header, a section's title) is kept as long as there is room for it.
void Cut(std::vector<std::string>& lines, std::size_t room, const char* what) {
  if (lines.size() <= room) return;
  if (room <= 1) {
    lines.resize(room);
    return;
  }
  std::size_t left_out = lines.size() - (room - 1);
  lines.resize(room - 1);
  lines.push_back("… " + std::to_string(left_out) + " more " + what);
}

}  // namespace

std::string_view StateColour(std::string_view state) {
  static const std::map<std::string_view, std::string_view> kColours = {
      {"running", "32"}, {"busy", "32"},   {"done", "32"},     {"approved", "32"},
      {"ready", "36"},   {"idle", "36"},   {"starting", "36"}, {"blocked", "33"},
      {"waiting", "33"}, {"review", "33"}, {"paused", "33"},   {"stopping", "33"},
      {"backoff", "33"}, {"failed", "31"}, {"dead", "31"},     {"cancelled", "2"},
      {"stopped", "2"}};
  auto it = kColours.find(state);
  return it == kColours.end() ? std::string_view() : it->second;
}

std::string FitWidth(const std::string& line, std::size_t width) {
  if (width == 0) return line;
  // Visible code points, escape sequences (ESC [ ... final byte) skipped.
  auto escape_end = [&](std::size_t i) {
    std::size_t j = i + 2;
    while (j < line.size() && !(line[j] >= 0x40 && line[j] <= 0x7e)) ++j;
    return std::min(j + 1, line.size());
  };
  std::size_t visible = 0;
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i = escape_end(i);
      continue;
    }
    visible += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
    ++i;
  }
  if (visible <= width) return line;
  std::string out;
  bool coloured = false;
  std::size_t n = 0;
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      std::size_t end = escape_end(i);
      out.append(line, i, end - i);
      coloured = true;
      i = end;
      continue;
    }
    bool starts = (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
    if (starts && ++n > width - 1) break;
    out += line[i];
    ++i;
  }
  out += "…";
  if (coloured) out += "\x1b[0m";
  return out;
}

std::vector<std::string> RenderTop(const TopData& data, const TopView& view) {
  std::vector<std::string> frame = Head(data, view);
  std::vector<std::string> tables[] = {Slots(data, view), OtherWorkers(data, view)};
  std::vector<std::string> events = Events(data, view);
  // With a height: a blank line before each section; the tables first, leaving the title and
  // the newest few events their room; the events fill what is left.
  constexpr std::size_t kEventsKept = 5;
  const std::size_t reserve = std::min(events.size(), kEventsKept + 1) + 1;
  auto add = [&](std::vector<std::string>& lines, std::size_t kept, const char* what) {
    if (lines.empty()) return;
    if (view.height > 0) {
      if (frame.size() + kept + 2 > view.height) return;
      Cut(lines, view.height - frame.size() - kept - 1, what);
    }
    frame.push_back("");
    for (std::string& line : lines) frame.push_back(std::move(line));
  };
  add(tables[0], reserve, "slots");
  add(tables[1], reserve, "workers");
  add(events, 0, "events");
  for (std::string& line : frame) line = FitWidth(line, view.width);
  return frame;
}

nlohmann::json TopJson(const TopData& data) {
  nlohmann::json workers = nlohmann::json::array();
  for (const Worker& w : data.workers) workers.push_back(ToJson(w, data.now));
  nlohmann::json events = nlohmann::json::array();
  for (const Event& e : data.events) events.push_back(ToJson(e));
  return {{"at", FormatTime(data.now.wall)},
          {"store", data.store},
          {"pool", data.pool},
          {"workers", workers},
          {"events", events},
          {"error", data.error}};
}

}  // namespace tx::cli
