#include "api/dashboard.h"

#include <httplib.h>

#include <string>

#include "api/http_server.h"
#include "api/http_util.h"
#include "core/error.h"

namespace tx::api {

namespace {

const EmbeddedAsset* FindAsset(std::string_view name) {
  for (const EmbeddedAsset& a : DashboardAssets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// Answers with `asset`, or 304 when the client already holds this version of it.
void ServeAsset(const EmbeddedAsset& asset, const httplib::Request& req, httplib::Response& res) {
  res.set_header("ETag", std::string(asset.etag));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (asset.content_type.starts_with("text/html")) {
    // Everything the page needs comes from this server; nothing may frame it.
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
  }
  if (req.get_header_value("If-None-Match") == asset.etag) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
}

}  // namespace

void ServeDashboardPage(const httplib::Request& req, httplib::Response& res) {
  const EmbeddedAsset* index = FindAsset("index.html");
  if (!index) return ReplyError(res, Error::NotFound("the dashboard was not built in"));
  ServeAsset(*index, req, res);
}

void ServeDashboardAsset(const httplib::Request& req, httplib::Response& res) {
  std::string name = req.matches[1].str();
  const EmbeddedAsset* asset = FindAsset(name);
  if (!asset) {
    return ReplyError(res, Error::NotFound("no dashboard asset " + name));
  }
  ServeAsset(*asset, req, res);
}

void ServeDashboard(HttpServer& server) {
  server.Get("/", ServeDashboardPage);
  server.Get(kDashboardAssetPattern, ServeDashboardAsset);
}

}  // namespace tx::api
