// The header compiles as C++17 (-Wall -Wextra -Werror), may be included twice, links, and its
// declarations match the library (a few calls are made).
#include "acp_host.h"
#include "acp_host.h"

#include <cstdio>
#include <cstring>
#include <string>

int main() {
    if (acph_abi_version() != ACPH_ABI_VERSION) return 1;
    if (std::string(acph_version()) != ACPH_VERSION_STRING) return 2;
    if (std::strcmp(acph_status_str(ACPH_STATUS_STALE_ID), "stale_id") != 0) return 3;
    acph_host *host = nullptr;
    acph_error *err = nullptr;
    const std::string config = R"({"permission":"manual"})";
    if (acph_host_new(config.data(), config.size(), &host, &err) != ACPH_STATUS_OK) return 4;
    acph_event *ev = nullptr;
    if (acph_host_try_next_event(host, &ev) != ACPH_STATUS_EMPTY) return 5;
    acph_status st = acph_permission_respond(host, 42, nullptr, 0, &err);
    if (st != ACPH_STATUS_NOT_FOUND || err == nullptr || err->code != st) return 6;
    acph_error_free(err);
    acph_host_free(host);
    std::puts("header_cpp: ok");
    return 0;
}
