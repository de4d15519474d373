// Notifications end to end (issue 22): a real `tx orchestrator start` sends to a real HTTP
// receiver the test runs (and stops, and restarts), and to a command; the delivery's body,
// headers and signature; retries with the same X-Tx-Delivery; nothing lost or sent twice across
// a kill -9 of the orchestrator while the receiver is down. Waits poll with generous bounds.

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>
#include <thread>

#include "http_client.h"
#include "orchestrator_fixture.h"
#include "webhook_receiver.h"

namespace {

using namespace tx::testing;

std::string HmacHex(const std::string& key, const std::string& body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &len);
  std::string out;
  char hex[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", mac[i]);
    out += hex;
  }
  return out;
}

class NotifyTest : public OrchestratorTest {
 protected:
  void WriteConfig(const std::string& toml) { std::ofstream(Path(".tx/config.toml")) << toml; }
  std::string WebhookConfig(const std::string& url, const std::string& events) {
    return "[[notify]]\nurl = \"" + url + "\"\nsecret = \"s3cret\"\nevents = " + events + "\n";
  }
  // A task that fails for good at once.
  std::string AddFailingTask() { return AddShellTask("exit 3", {"--max-attempts", "1"}); }

  json Deliveries(const std::string& status = "") {
    Args args = {"--json", "notify", "list"};
    if (!status.empty()) args.insert(args.end(), {"--status", status});
    RunResult r = Tx(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    return j.is_array() ? j : json::array();
  }
};

TEST_F(NotifyTest, AFailedTaskReachesTheWebhookSignedWithTheTaskAsShown) {
  Receiver receiver;
  receiver.Start();
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]"));
  StartOrchestrator({"--workers", "1"});
  std::string id = AddFailingTask();
  ASSERT_TRUE(WaitFor([&] { return !receiver.Got().empty(); }, 60s)) << Log();
  std::this_thread::sleep_for(1s);  // nothing else may follow
  std::vector<Request> got = receiver.Got();
  ASSERT_EQ(got.size(), 1u);
  const Request& r = got[0];
  EXPECT_EQ(r.Header("X-Tx-Event"), "task.failed");
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.Header("X-Tx-Signature"), "sha256=" + HmacHex("s3cret", r.body));
  std::string delivery = r.Header("X-Tx-Delivery");
  EXPECT_EQ(delivery.rfind("dlv-", 0), 0u) << delivery;
  json body = json::parse(r.body);
  EXPECT_EQ(body["event"]["type"], "task.failed");
  EXPECT_EQ(body["event"]["task_id"], id);
  // The event exactly as tx events --json prints it, the task as tx task show --json does.
  json events = json::parse(Tx({"--json", "events"}).out);
  json printed;
  for (const auto& e : events) {
    if (e["id"] == body["event"]["id"]) printed = e;
  }
  EXPECT_EQ(body["event"], printed);
  json shown = Show(id);
  EXPECT_EQ(body["task"]["status"], "failed");
  EXPECT_EQ(body["task"]["attempts"], shown["attempts"]);
  EXPECT_EQ(body["task"]["title"], shown["title"]);
  EXPECT_EQ(body["text"], "tx: " + id + " \"t\" failed: exited 3");
  json list = Deliveries();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["id"], delivery);
  EXPECT_EQ(list[0]["status"], "delivered");
  EXPECT_EQ(list[0]["attempts"], 1);
}

TEST_F(NotifyTest, AReceiverAnswering500IsTriedAgainWithTheSameDeliveryUntilItTakesIt) {
  Receiver receiver;
  receiver.AnswerNext({500, 503});
  receiver.Start();
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]"));
  StartOrchestrator({"--workers", "1"});
  AddFailingTask();
  ASSERT_TRUE(WaitFor([&] { return receiver.Got().size() >= 3; }, 60s)) << Log();
  ASSERT_TRUE(WaitFor([&] { return Deliveries("delivered").size() == 1; }, 30s));
  std::this_thread::sleep_for(2s);
  std::vector<Request> got = receiver.Got();
  ASSERT_EQ(got.size(), 3u);
  for (const auto& r : got) EXPECT_EQ(r.Header("X-Tx-Delivery"), got[0].Header("X-Tx-Delivery"));
  json list = Deliveries();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["attempts"], 3);
  EXPECT_EQ(list[0]["last_error"], "");
}

// A webhook is sent by tx's HTTP module, opened when a webhook is first made
// (exec/http_module.h): an orchestrator started without one does not map it, and a SIGHUP that
// adds one opens it then and sends.
TEST_F(NotifyTest, AWebhookAddedBySighupOpensTheHttpModuleAndIsSent) {
  Receiver receiver;
  receiver.Start();
  BackgroundProcess& o = StartOrchestrator({"--workers", "1"});
  std::string maps = "/proc/" + std::to_string(o.pid()) + "/maps";
  EXPECT_EQ(ReadFile(maps).find("libtx_http.so"), std::string::npos);
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]"));
  o.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return Log().find("config reloaded") != std::string::npos; }, 30s))
      << Log();
  EXPECT_NE(ReadFile(maps).find("libtx_http.so"), std::string::npos);
  std::string id = AddFailingTask();
  ASSERT_TRUE(WaitFor([&] { return !receiver.Got().empty(); }, 60s)) << Log();
  std::vector<Request> got = receiver.Got();
  EXPECT_EQ(got[0].Header("X-Tx-Event"), "task.failed");
  EXPECT_EQ(json::parse(got[0].body)["event"]["task_id"], id);
}

// The receiver is down while a task fails; the orchestrator is killed with kill -9 while the
// delivery waits to be tried again; both come back: it arrives once, with the same id.
TEST_F(NotifyTest, ADeliveryOutlivesADownReceiverAndAKilledOrchestratorAndArrivesOnce) {
  Receiver receiver;  // not started: down
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]"));
  BackgroundProcess& first = StartOrchestrator({"--workers", "1"});
  std::string id = AddFailingTask();
  json pending;
  ASSERT_TRUE(WaitFor(
      [&] {
        json list = Deliveries("pending");
        if (list.size() != 1 || list[0].value("attempts", 0) < 2) return false;
        pending = list[0];
        return true;
      },
      60s))
      << Log();
  EXPECT_NE(pending["last_error"].get<std::string>().find("cannot connect"), std::string::npos)
      << pending.dump();
  first.Signal(SIGKILL);
  ASSERT_EQ(first.Wait(10s), 128 + SIGKILL);
  receiver.Start();
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(receiver.Got().empty()) << "sent with no orchestrator running";
  // Its workers drain and go by themselves (their parent-death signal); then start again.
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers().empty(); }, 60s));
  StartOrchestrator({"--workers", "1"});
  ASSERT_TRUE(WaitFor([&] { return !receiver.Got().empty(); }, 60s)) << Log();
  ASSERT_TRUE(WaitFor([&] { return Deliveries("delivered").size() == 1; }, 30s));
  std::this_thread::sleep_for(2s);
  std::vector<Request> got = receiver.Got();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].Header("X-Tx-Delivery"), pending["id"]);
  EXPECT_EQ(json::parse(got[0].body)["event"]["task_id"], id);
  json list = Deliveries();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_GT(list[0]["attempts"].get<int>(), pending["attempts"].get<int>());
}

TEST_F(NotifyTest, ACommandSinkGetsTheSameJsonOnItsStandardInput) {
  std::string out = Path("command.jsonl"), env = Path("command.env");
  WriteConfig("[[notify]]\ncommand = [\"sh\", \"-c\", \"cat >> " + out + "; echo >> " + out +
              "; echo \\\"$TX_EVENT $TX_DELIVERY\\\" >> " + env + "\"]\n");
  StartOrchestrator({"--workers", "1"});
  std::string id = AddShellTask("true", {"--review"});  // task.review is a default event
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(env).empty(); }, 60s)) << Log();
  json body = json::parse(ReadFile(out));
  EXPECT_EQ(body["event"]["type"], "task.review");
  EXPECT_EQ(body["task"]["id"], id);
  EXPECT_EQ(body["task"]["status"], "review");
  EXPECT_NE(body["text"].get<std::string>().find("is waiting for review"), std::string::npos);
  json list = Deliveries("delivered");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(ReadFile(env), "task.review " + list[0]["id"].get<std::string>() + "\n");
}

// A sink that never takes it: tried until give_up_after, then failed, with a notify.failed event
// that the dashboard and tx notify list show.
TEST_F(NotifyTest, ADeliveryNeverTakenFailsAfterGiveUpAfterWithAnEvent) {
  WriteConfig(
      "[[notify]]\ncommand = [\"sh\", \"-c\", \"echo refused >&2; exit 7\"]\n"
      "give_up_after = \"3s\"\n");
  StartOrchestrator({"--workers", "1"});
  std::string id = AddFailingTask();
  ASSERT_TRUE(WaitFor([&] { return Deliveries("failed").size() == 1; }, 60s)) << Log();
  json failed = Deliveries("failed")[0];
  EXPECT_EQ(failed["event_type"], "task.failed");
  EXPECT_EQ(failed["task_id"], id);
  EXPECT_GE(failed["attempts"].get<int>(), 2);
  EXPECT_EQ(failed["last_error"], "exit code 7: refused");
  json events = Events("notify.failed");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["task_id"], id);
  EXPECT_EQ(events[0]["data"]["delivery"], failed["id"]);
}

TEST_F(NotifyTest, NotifyTestReachesEverySinkAndSaysWhichDidNot) {
  Receiver receiver;
  receiver.Start();
  Receiver down;
  RunResult none = Tx({"notify", "test"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no [[notify]] sinks"), std::string::npos) << none.err;
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]") +
              WebhookConfig(down.Url(), "[\"task.failed\"]"));
  RunResult r = Tx({"--json", "notify", "test"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json error = json::parse(r.out)["error"];
  EXPECT_EQ(error["code"], "unavailable");
  std::string message = error["message"];
  EXPECT_NE(message.find("1 of 2 sinks did not take the test notification (" + down.Url() + ": "),
            std::string::npos)
      << message;
  ASSERT_EQ(receiver.Got().size(), 1u);
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]"));
  RunResult ok = Tx({"--json", "notify", "test"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  json results = json::parse(ok.out);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0]["ok"].get<bool>());
  EXPECT_EQ(results[0]["delivery"], receiver.Got().back().Header("X-Tx-Delivery"));
  EXPECT_EQ(receiver.Got()[0].Header("X-Tx-Event"), "notify.test");
  EXPECT_EQ(json::parse(receiver.Got()[0].body)["text"], "tx: a test notification from tx");
  RunResult bad = Tx({"notify", "list", "--status", "lost"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown delivery status 'lost'"), std::string::npos) << bad.err;
  WriteConfig("[[notify]]\nurl = \"ftp://x\"\n");
  RunResult refused = Tx({"notify", "test"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("must start with http:// or https://"), std::string::npos);
}

TEST_F(NotifyTest, TheApiListsTheDeliveries) {
  Receiver receiver;
  receiver.Start();
  WriteConfig(WebhookConfig(receiver.Url(), "[\"task.failed\"]"));
  StartOrchestrator({"--workers", "1", "--http", "127.0.0.1:0"});
  std::string url = Status()["config"].value("http", "");
  int port = std::stoi(url.substr(url.rfind(':') + 1));
  std::string token = ReadFile(Path(".tx/token"));
  while (!token.empty() && token.back() == '\n') token.pop_back();
  ApiClient api(port, token);
  AddFailingTask();
  ASSERT_TRUE(WaitFor([&] { return Deliveries("delivered").size() == 1; }, 60s)) << Log();
  HttpReply all = api.Get("/api/notifications");
  ASSERT_EQ(all.status, 200);
  ASSERT_EQ(all.body.size(), 1u);
  EXPECT_EQ(all.body[0]["status"], "delivered");
  EXPECT_EQ(all.body[0]["event_type"], "task.failed");
  EXPECT_EQ(all.body[0]["sink"], receiver.Url());
  EXPECT_TRUE(api.Get("/api/notifications?status=failed").body.empty());
  EXPECT_EQ(api.Get("/api/notifications?status=lost").status, 400);
}

}  // namespace
