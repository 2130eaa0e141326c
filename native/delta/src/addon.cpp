// The engine as a Node-API addon, for the device agent: `patch` rebuilds a slot from a delta
// in a streaming way (the server runs the `updater-delta` program in a child process instead,
// so native code never runs inside it). Synchronous: one call per file, no callbacks.
#include <node_api.h>

#include <string>

#include "apply.hpp"
#include "diff.hpp"
#include "io.hpp"

namespace {

bool stringArg(napi_env env, napi_value value, std::string* out) {
  size_t length = 0;
  if (napi_get_value_string_utf8(env, value, nullptr, 0, &length) != napi_ok) return false;
  out->resize(length + 1);
  napi_get_value_string_utf8(env, value, out->data(), length + 1, &length);
  out->resize(length);
  return true;
}

// Three path arguments; throws a TypeError and returns false otherwise.
bool threePaths(napi_env env, napi_callback_info info, std::string paths[3]) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  for (size_t i = 0; i < 3; i++) {
    if (i >= argc || !stringArg(env, argv[i], &paths[i])) {
      napi_throw_type_error(env, "DELTA_USAGE", "three file paths expected");
      return false;
    }
  }
  return true;
}

void throwFailure(napi_env env, const char* code, const char* message) {
  const std::string prefixed = std::string("DELTA_") + code;
  napi_throw_error(env, prefixed.c_str(), message);
}

template <typename Body>
napi_value guarded(napi_env env, Body body) {
  try {
    return body();
  } catch (const delta::Failure& failure) {
    throwFailure(env, failure.code(), failure.what());
  } catch (const std::bad_alloc&) {
    throwFailure(env, "NO_MEMORY", "out of memory");
  } catch (const std::exception& err) {
    throwFailure(env, "INTERNAL", err.what());
  }
  return nullptr;
}

napi_value Patch(napi_env env, napi_callback_info info) {
  std::string paths[3];
  if (!threePaths(env, info, paths)) return nullptr;
  return guarded(env, [&] {
    napi_value result;
    napi_create_double(env, static_cast<double>(delta::writePatched(paths[0], paths[1], paths[2])), &result);
    return result;
  });
}

napi_value Verify(napi_env env, napi_callback_info info) {
  std::string paths[3];
  if (!threePaths(env, info, paths)) return nullptr;
  return guarded(env, [&] {
    delta::verifyPatch(paths[0], paths[1], paths[2]);
    napi_value result;
    napi_get_boolean(env, true, &result);
    return result;
  });
}

// diff(old, new, patch, format?): the format's name, "bsdiff40" unless given.
napi_value Diff(napi_env env, napi_callback_info info) {
  std::string paths[3];
  if (!threePaths(env, info, paths)) return nullptr;
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  std::string formatName = "bsdiff40";
  napi_valuetype type = napi_undefined;
  if (argc == 4) napi_typeof(env, argv[3], &type);
  if (type != napi_undefined && !stringArg(env, argv[3], &formatName)) {
    napi_throw_type_error(env, "DELTA_USAGE", "the format is a name");
    return nullptr;
  }
  return guarded(env, [&] {
    const delta::DiffStats stats = delta::writeDiff(paths[0], paths[1], paths[2], delta::formatNamed(formatName));
    napi_value result;
    napi_create_double(env, static_cast<double>(stats.patchBytes), &result);
    return result;
  });
}

napi_value Init(napi_env env, napi_value exports) {
  const napi_property_descriptor properties[] = {
      {"patch", nullptr, Patch, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"verify", nullptr, Verify, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"diff", nullptr, Diff, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, 3, properties);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
