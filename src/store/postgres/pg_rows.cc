#include "store/postgres/pg_rows.h"

#include "store/row_codec.h"

namespace tx::store::postgres {

Status ReadTask(const Rows& r, int i, Task& t, int at) {
  auto col = [at](int k) { return at + k; };
  t.seq = r.Int(i, col(0));
  t.id = r.Text(i, col(1));
  t.title = r.Text(i, col(2));
  t.description = r.Text(i, col(3));
  t.instructions = r.Text(i, col(4));
  t.deliverables = r.Text(i, col(5));
  t.steps = StringList(r.Text(i, col(6)));
  t.priority = r.Int(i, col(7));
  t.queue = r.Text(i, col(8));
  t.requires_caps = StringList(r.Text(i, col(9)));
  t.after = StringList(r.Text(i, col(10)));
  t.owner = r.Text(i, col(11));
  t.workdir = r.Text(i, col(12));
  t.command = StringList(r.Text(i, col(13)));
  t.agent = r.Text(i, col(14));
  t.timeout_ms = r.Int(i, col(15));
  t.max_attempts = static_cast<int>(r.Int(i, col(16)));
  t.review = r.Int(i, col(17)) != 0;
  t.repo = r.Text(i, col(18));
  t.base_branch = r.Text(i, col(19));
  t.metadata = Object(r.Text(i, col(20)));
  t.result = r.Text(i, col(21));
  t.error = r.Text(i, col(22));
  TX_ASSIGN_OR_RETURN(t.status, ParseTaskStatus(r.Text(i, col(23))));
  t.attempt = static_cast<int>(r.Int(i, col(24)));
  t.run_after = r.Int(i, col(25));
  t.created_at = r.Int(i, col(26));
  t.updated_at = r.Int(i, col(27));
  t.started_at = r.Int(i, col(28));
  t.finished_at = r.Int(i, col(29));
  return Ok();
}

Status ReadTask(const Rows& r, int i, Task& t) { return ReadTask(r, i, t, 0); }

Params TaskParams(const Task& t) {
  Params p;
  p.Add(t.id)
      .Add(t.title)
      .Add(t.description)
      .Add(t.instructions)
      .Add(t.deliverables)
      .Add(ListText(t.steps))
      .Add(t.priority)
      .Add(t.queue)
      .Add(ListText(t.requires_caps))
      .Add(ListText(t.after))
      .Add(t.owner)
      .Add(t.workdir)
      .Add(ListText(t.command))
      .Add(t.agent)
      .Add(t.timeout_ms)
      .Add(t.max_attempts)
      .Add(t.review ? 1 : 0)
      .Add(t.repo)
      .Add(t.base_branch)
      .Add(t.metadata.dump())
      .Add(t.result)
      .Add(t.error)
      .Add(ToString(t.status))
      .Add(t.attempt)
      .Add(t.run_after)
      .Add(t.created_at)
      .Add(t.updated_at)
      .Add(t.started_at)
      .Add(t.finished_at);
  return p;
}

Status ReadClaim(const Rows& r, int i, Claim& c) {
  c.token = r.Int(i, 0);
  c.task_id = r.Text(i, 1);
  c.worker_id = r.Text(i, 2);
  c.attempt = static_cast<int>(r.Int(i, 3));
  c.claimed_at = r.Int(i, 4);
  c.lease_ms = r.Int(i, 5);
  c.lease_expires_at = r.Int(i, 6);
  c.renewed_count = static_cast<int>(r.Int(i, 7));
  TX_ASSIGN_OR_RETURN(c.status, ParseClaimStatus(r.Text(i, 8)));
  c.ended_at = r.Int(i, 9);
  TX_ASSIGN_OR_RETURN(c.end_reason, ParseEndReason(r.Text(i, 10)));
  if (!r.IsNull(i, 11)) c.exit_code = static_cast<int>(r.Int(i, 11));
  return Ok();
}

Params ClaimInsertParams(const Claim& c) {
  Params p;
  p.Add(c.task_id)
      .Add(c.worker_id)
      .Add(c.attempt)
      .Add(c.claimed_at)
      .Add(c.lease_ms)
      .Add(c.lease_expires_at)
      .Add(c.renewed_count)
      .Add(ToString(c.status))
      .Add(c.ended_at)
      .Add(ToString(c.end_reason))
      .Add(c.exit_code);
  return p;
}

Status ReadWorker(const Rows& r, int i, Worker& w, int at) {
  auto col = [at](int k) { return at + k; };
  w.id = r.Text(i, col(0));
  w.name = r.Text(i, col(1));
  w.slot = r.Text(i, col(2));
  w.hostname = r.Text(i, col(3));
  w.pid = r.Int(i, col(4));
  w.capabilities = StringList(r.Text(i, col(5)));
  w.queues = StringList(r.Text(i, col(6)));
  TX_ASSIGN_OR_RETURN(w.status, ParseWorkerStatus(r.Text(i, col(7))));
  w.heartbeat_interval_ms = r.Int(i, col(8));
  w.registered_at = r.Int(i, col(9));
  w.last_heartbeat_at = r.Int(i, col(10));
  w.current_task_id = r.Text(i, col(11));
  w.reason = r.Text(i, col(12));
  w.metadata = Object(r.Text(i, col(13)));
  TX_ASSIGN_OR_RETURN(w.request, ParseWorkerRequest(r.Text(i, col(14))));
  w.pool = r.Text(i, col(15));
  w.busy_heartbeat_interval_ms = r.Int(i, col(16));
  return Ok();
}

Status ReadWorker(const Rows& r, int i, Worker& w) { return ReadWorker(r, i, w, 0); }

Params WorkerParams(const Worker& w) {
  Params p;
  p.Add(w.id)
      .Add(w.name)
      .Add(w.slot)
      .Add(w.hostname)
      .Add(w.pid)
      .Add(ListText(w.capabilities))
      .Add(ListText(w.queues))
      .Add(ToString(w.status))
      .Add(w.heartbeat_interval_ms)
      .Add(w.registered_at)
      .Add(w.last_heartbeat_at)
      .Add(w.current_task_id)
      .Add(w.reason)
      .Add(w.metadata.dump())
      .Add(ToString(w.request))
      .Add(w.pool)
      .Add(w.busy_heartbeat_interval_ms);
  return p;
}

Status ReadUsage(const Rows& r, int i, AttemptUsage& u) {
  u.token = r.Int(i, 0);
  u.task_id = r.Text(i, 1);
  u.attempt = static_cast<int>(r.Int(i, 2));
  u.worker_id = r.Text(i, 3);
  u.agent = r.Text(i, 4);
  u.account = r.Text(i, 5);
  u.queue = r.Text(i, 6);
  u.session_id = r.Text(i, 7);
  u.model = r.Text(i, 8);
  u.tokens = {r.Int(i, 9), r.Int(i, 10), r.Int(i, 11), r.Int(i, 12)};
  u.cost_usd = MicroToUsd(r.Int(i, 13));
  u.cost_estimated = r.Int(i, 14) != 0;
  u.turns = static_cast<int>(r.Int(i, 15));
  u.denials = JsonArray(r.Text(i, 16));
  u.started_at = r.Int(i, 17);
  u.updated_at = r.Int(i, 18);
  return Ok();
}

UsageTotal UsageTotalOf(const Rows& r, int i) {
  UsageTotal t;
  t.attempts = static_cast<int>(r.Int(i, 1));
  t.tokens = {r.Int(i, 2), r.Int(i, 3), r.Int(i, 4), r.Int(i, 5)};
  t.cost_usd = MicroToUsd(r.Int(i, 6));
  t.estimated = r.Int(i, 7) != 0;
  t.turns = static_cast<int>(r.Int(i, 8));
  return t;
}

Status ReadLimit(const Rows& r, int i, AgentLimit& l) {
  l.profile = r.Text(i, 0);
  l.account = r.Text(i, 1);
  l.until = r.Int(i, 2);
  l.since = r.Int(i, 3);
  l.reason = r.Text(i, 4);
  l.task_id = r.Text(i, 5);
  l.strikes = static_cast<int>(r.Int(i, 6));
  l.resumed = r.Int(i, 7) != 0;
  return Ok();
}

Status ReadDelivery(const Rows& r, int i, Delivery& d) {
  d.seq = r.Int(i, 0);
  d.id = r.Text(i, 1);
  d.sink = r.Text(i, 2);
  d.event_id = r.Int(i, 3);
  d.event_type = r.Text(i, 4);
  d.task_id = r.Text(i, 5);
  d.body = r.Text(i, 6);
  TX_ASSIGN_OR_RETURN(d.status, ParseDeliveryStatus(r.View(i, 7)));
  d.attempts = static_cast<int>(r.Int(i, 8));
  d.created_at = r.Int(i, 9);
  d.next_at = r.Int(i, 10);
  d.last_at = r.Int(i, 11);
  d.last_error = r.Text(i, 12);
  return Ok();
}

Status ReadOrchestrator(const Rows& r, int i, OrchestratorState& o) {
  o.id = r.Text(i, 0);
  o.dir = r.Text(i, 1);
  o.status = r.Text(i, 2);
  o.pid = r.Int(i, 3);
  o.hostname = r.Text(i, 4);
  o.started_at = r.Int(i, 5);
  o.seen_at = r.Int(i, 6);
  o.config = Object(r.Text(i, 7));
  o.request = Object(r.Text(i, 8));
  o.pool = Object(r.Text(i, 9));
  return Ok();
}

std::vector<std::string> FirstColumn(const Rows& r) {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(r.size()));
  for (int i = 0; i < r.size(); ++i) out.push_back(r.Text(i, 0));
  return out;
}

std::vector<std::string> JsonList(std::string_view text) { return StringList(std::string(text)); }

}  // namespace tx::store::postgres
