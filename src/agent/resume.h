#pragma once
// Resume (docs/agents.md): which session an attempt continues, and what its agent is told. A
// retry of a task whose last attempt recorded a session, and a task sent back from review,
// resume that session — the same profile, the same account — with the note (or the failure) as
// the prompt, unless the retry asked for a fresh start. Pure.

#include <optional>
#include <string>
#include <vector>

#include "agent/profile.h"
#include "core/task.h"
#include "core/usage.h"

namespace tx::agent {

struct ResumePlan {
  std::string session_id;
  std::string account;  // the account that session lives under
  std::string prompt;
  // The tokens the session's earlier attempts recorded: an agent that reports a thread's tokens
  // so far rather than a run's (Codex) has them taken off (Follower::SetBaseline).
  TokenCounts session_tokens;
};

// The session attempt `attempt` of `task` resumes under `profile`, given the task's ledger
// (`history`): the newest earlier attempt of the same profile that recorded one, after the last
// fresh start (metadata.fresh_after_attempt). nullopt when there is none, or when the profile's
// family cannot resume.
std::optional<ResumePlan> PlanResume(const Task& task, int attempt, const AgentProfile& profile,
                                     const std::vector<AttemptUsage>& history);

// The prompt of a resumed attempt: the answers to the questions the resumed attempt (or a later
// one) asked (core/question.h); the note of a retry or of requested changes given since the
// resumed attempt (metadata.next_note); else, with neither, how the last attempt ended (the
// task's error, or metadata.last_error after a manual retry); then how to report.
std::string ResumePrompt(const Task& task, int resumed_attempt);

}  // namespace tx::agent
