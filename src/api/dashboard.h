#pragma once
// The dashboard (README, "Dashboard"): one page of plain HTML, CSS and JavaScript that reads the
// HTTP API and follows its event stream. Its files live in src/api/dashboard/ and are compiled
// into the binary at build time (dashboard/embed_assets.cmake), so serving it needs nothing on
// disk and nothing from the network.

#include <span>
#include <string_view>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tx::api {

class HttpServer;

struct EmbeddedAsset {
  std::string_view name;  // "app.js": served at /assets/app.js (index.html also at /)
  std::string_view content_type;
  std::string_view etag;  // a quoted hash of the body
  std::string_view body;
};

// Every file of the dashboard, as compiled in (the generated dashboard_assets.cc).
std::span<const EmbeddedAsset> DashboardAssets();

// GET / (index.html) and GET /assets/NAME (kDashboardAssetPattern, NAME its group). Each answer
// carries its ETag and `Cache-Control: no-cache`, so a browser revalidates (304 when unchanged)
// and a new binary's page is never mixed with an old script. An unknown asset is a 404 in the
// API's error shape. The server's auth rules apply as to every route.
inline constexpr char kDashboardAssetPattern[] = R"(/assets/([A-Za-z0-9_.-]+))";
void ServeDashboardPage(const httplib::Request& req, httplib::Response& res);
void ServeDashboardAsset(const httplib::Request& req, httplib::Response& res);

// Registers both (the API lists them in its routes instead: api/server.cc).
void ServeDashboard(HttpServer& server);

}  // namespace tx::api
