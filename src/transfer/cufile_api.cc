#include "transfer/cufile_api.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

namespace tempokv {

std::string cufile_error_string(cufile::Error e) {
  return "cuFile error " + std::to_string(e.err) +
         (e.cu_err != 0 ? " (CUDA driver error " + std::to_string(e.cu_err) + ")" : "");
}

GdsMode detect_gds_mode(const std::string& proc_driver_dir) {
  std::error_code ec;
  return std::filesystem::exists(proc_driver_dir + "/nvidia-fs", ec) ? GdsMode::kDirect
                                                                     : GdsMode::kCompat;
}

std::string gds_mode_description(GdsMode mode) {
  return mode == GdsMode::kDirect
             ? "GPU-direct (nvidia-fs loaded)"
             : "compatibility mode (no nvidia-fs: cuFile bounces through host memory, assumed)";
}

namespace {

template <typename F>
bool resolve(void* lib, const char* symbol, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return *fn != nullptr;
}

Result<CuFileApi> load_once() {
  void* lib = nullptr;
  std::string tried;
  for (const char* name : {"libcufile.so.0", "libcufile.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      CuFileApi api{};
      api.library = name;
      bool ok = resolve(lib, "cuFileDriverOpen", &api.driver_open) &&
                resolve(lib, "cuFileDriverClose", &api.driver_close) &&
                resolve(lib, "cuFileHandleRegister", &api.handle_register) &&
                resolve(lib, "cuFileHandleDeregister", &api.handle_deregister) &&
                resolve(lib, "cuFileBufRegister", &api.buf_register) &&
                resolve(lib, "cuFileBufDeregister", &api.buf_deregister) &&
                resolve(lib, "cuFileRead", &api.read);
      if (!ok) return Status::unavailable(std::string(name) + " lacks a cuFile symbol");
      resolve(lib, "cuFileBatchIOSetUp", &api.batch_setup);
      resolve(lib, "cuFileBatchIOSubmit", &api.batch_submit);
      resolve(lib, "cuFileBatchIOGetStatus", &api.batch_get_status);
      resolve(lib, "cuFileBatchIODestroy", &api.batch_destroy);
      cufile::Error e = api.driver_open();
      if (e.err != 0) {
        return Status::unavailable("cuFileDriverOpen failed: " + cufile_error_string(e));
      }
      // The library stays loaded for the life of the process; the driver is closed at exit by
      // the library's own destructor.
      return api;
    }
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : name);
  }
  return Status::unavailable("no libcufile (" + tried + ")");
}

}  // namespace

Result<const CuFileApi*> CuFileApi::load() {
  static std::once_flag once;
  static Result<CuFileApi>* result = nullptr;
  std::call_once(once, [] { result = new Result<CuFileApi>(load_once()); });
  if (!result->is_ok()) return result->status();
  return &result->value();
}

}  // namespace tempokv
