#pragma once
// libpq, loaded when a PostgreSQL store is first opened (dlopen), not linked: libpq brings
// OpenSSL, Kerberos and LDAP with it, and every tx process on a SQLite store — each worker, each
// CLI call — would map them (several MB of Rss each) for nothing. The functions below have
// libpq's names and signatures in a namespace of their own; the PostgreSQL backend calls them
// as pq::PQexec(...) and so on. libpq-fe.h is included for its types only.
//
// Load() must have succeeded before any other function here is called: store::Open does it
// before opening a PostgreSQL store, and the change watch and the leader lock are reached only
// through an open store.

#include <libpq-fe.h>

#include "core/error.h"

namespace tx::store::postgres::pq {

// Loads libpq.so.5 once (thread-safe); unavailable, naming the package to install, when it
// cannot be loaded or lacks a function this backend calls (pipeline mode needs libpq 14).
Status Load();

#define TX_PQ_FUNCTIONS(X)                                                                       \
  X(PGconn*, PQconnectdbParams,                                                                  \
    (const char* const* keywords, const char* const* values, int expand_dbname),                 \
    (keywords, values, expand_dbname))                                                           \
  X(void, PQfinish, (PGconn * conn), (conn))                                                     \
  X(void, PQreset, (PGconn * conn), (conn))                                                      \
  X(ConnStatusType, PQstatus, (const PGconn* conn), (conn))                                      \
  X(char*, PQerrorMessage, (const PGconn* conn), (conn))                                         \
  X(int, PQsocket, (const PGconn* conn), (conn))                                                 \
  X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn * conn, PQnoticeProcessor proc, void* arg), \
    (conn, proc, arg))                                                                           \
  X(PGresult*, PQexec, (PGconn * conn, const char* query), (conn, query))                        \
  X(int, PQenterPipelineMode, (PGconn * conn), (conn))                                           \
  X(int, PQexitPipelineMode, (PGconn * conn), (conn))                                            \
  X(PGpipelineStatus, PQpipelineStatus, (const PGconn* conn), (conn))                            \
  X(int, PQpipelineSync, (PGconn * conn), (conn))                                                \
  X(int, PQsendPrepare,                                                                          \
    (PGconn * conn, const char* name, const char* query, int n, const Oid* types),               \
    (conn, name, query, n, types))                                                               \
  X(int, PQsendQueryPrepared,                                                                    \
    (PGconn * conn, const char* name, int n, const char* const* values, const int* lengths,      \
     const int* formats, int result_format),                                                     \
    (conn, name, n, values, lengths, formats, result_format))                                    \
  X(PGresult*, PQgetResult, (PGconn * conn), (conn))                                             \
  X(ExecStatusType, PQresultStatus, (const PGresult* res), (res))                                \
  X(char*, PQresultErrorMessage, (const PGresult* res), (res))                                   \
  X(char*, PQresultErrorField, (const PGresult* res, int field), (res, field))                   \
  X(void, PQclear, (PGresult * res), (res))                                                      \
  X(int, PQntuples, (const PGresult* res), (res))                                                \
  X(char*, PQgetvalue, (const PGresult* res, int row, int col), (res, row, col))                 \
  X(int, PQgetlength, (const PGresult* res, int row, int col), (res, row, col))                  \
  X(int, PQgetisnull, (const PGresult* res, int row, int col), (res, row, col))                  \
  X(char*, PQcmdStatus, (PGresult * res), (res))                                                 \
  X(char*, PQcmdTuples, (PGresult * res), (res))                                                 \
  X(int, PQconsumeInput, (PGconn * conn), (conn))                                                \
  X(PGnotify*, PQnotifies, (PGconn * conn), (conn))                                              \
  X(void, PQfreemem, (void* ptr), (ptr))

// The loaded functions.
struct Api {
#define TX_PQ_POINTER(ret, name, params, args) ret(*name) params = nullptr;
  TX_PQ_FUNCTIONS(TX_PQ_POINTER)
#undef TX_PQ_POINTER
};
const Api& Loaded();

#define TX_PQ_FORWARD(ret, name, params, args) \
  inline ret name params { return Loaded().name args; }
TX_PQ_FUNCTIONS(TX_PQ_FORWARD)
#undef TX_PQ_FORWARD

}  // namespace tx::store::postgres::pq
