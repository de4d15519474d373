#include "api/dashboard.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>
#include <set>
#include <string>
#include <thread>

#include "api/http_server.h"

namespace tx::api {
namespace {

const EmbeddedAsset* Find(std::string_view name) {
  for (const EmbeddedAsset& a : DashboardAssets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST(DashboardAssets, EachHasABodyATypeAndAQuotedEtag) {
  ASSERT_NE(Find("index.html"), nullptr);
  std::set<std::string_view> etags;
  for (const EmbeddedAsset& a : DashboardAssets()) {
    EXPECT_FALSE(a.body.empty()) << a.name;
    EXPECT_FALSE(a.content_type.empty()) << a.name;
    EXPECT_TRUE(a.etag.size() > 2 && a.etag.front() == '"' && a.etag.back() == '"') << a.etag;
    etags.insert(a.etag);
  }
  EXPECT_EQ(etags.size(), DashboardAssets().size()) << "two assets share an ETag";
  EXPECT_EQ(Find("app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(Find("style.css")->content_type, "text/css; charset=utf-8");
}

// A file the page loads but the CMake list forgot would be a 404 in the browser: every
// /assets/NAME of the page and every module a script imports is compiled in.
TEST(DashboardAssets, EveryFileThePageLoadsIsCompiledIn) {
  std::regex asset(R"(/assets/([A-Za-z0-9_.-]+))");
  std::regex import(R"(from '\./([A-Za-z0-9_.-]+)')");
  int references = 0;
  for (const EmbeddedAsset& a : DashboardAssets()) {
    std::string body(a.body);
    for (const std::regex* re : {&asset, &import}) {
      for (std::sregex_iterator it(body.begin(), body.end(), *re), end; it != end; ++it) {
        ++references;
        EXPECT_NE(Find((*it)[1].str()), nullptr) << a.name << " loads " << (*it)[1].str();
      }
    }
  }
  EXPECT_GE(references, 3);
}

class DashboardServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ServeDashboard(server_);
    Result<int> port = server_.Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.error().message();
    port_ = *port;
  }
  void TearDown() override { server_.Stop(); }
  httplib::Client Client() { return httplib::Client("127.0.0.1", port_); }

  HttpServer server_{HttpServer::Options{.handler_threads = 2}};
  int port_ = 0;
};

TEST_F(DashboardServer, ServesThePageAtTheRootAndItsFilesUnderAssets) {
  auto index = Client().Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(index->body, Find("index.html")->body);
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-cache");
  EXPECT_NE(index->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);

  auto app = Client().Get("/assets/app.js");
  ASSERT_TRUE(app);
  EXPECT_EQ(app->status, 200);
  EXPECT_EQ(app->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(app->get_header_value("ETag"), Find("app.js")->etag);
  EXPECT_EQ(app->body, Find("app.js")->body);
}

TEST_F(DashboardServer, AnUnchangedFileIsA304) {
  std::string etag(Find("style.css")->etag);
  auto same = Client().Get("/assets/style.css", {{"If-None-Match", etag}});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 304);
  EXPECT_TRUE(same->body.empty());
  auto other = Client().Get("/assets/style.css", {{"If-None-Match", "\"old\""}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
}

TEST_F(DashboardServer, AnUnknownFileIsANotFoundInTheApiShape) {
  auto missing = Client().Get("/assets/nope.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find(R"("code":"not_found")"), std::string::npos) << missing->body;
  EXPECT_NE(missing->body.find("nope.js"), std::string::npos);
}

}  // namespace
}  // namespace tx::api
