// CuFileApi: the few cuFile (GPUDirect Storage) entry points TempoKV uses, loaded with dlopen at
// run time so that cuFile is never a build dependency. Types follow the public cuFile API
// reference (cufile.h); only what the gds path needs is declared.
//
// load() tries libcufile.so.0 then libcufile.so (the dynamic loader's path, so LD_LIBRARY_PATH
// finds the nvidia-cufile Python wheel's copy), resolves the symbols and calls cuFileDriverOpen
// once per process. The batch entry points are optional (older libraries lack them).
//
// Thread safety: load() is thread-safe (once per process); the table is immutable afterwards.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "tempokv/status.h"

namespace tempokv {

namespace cufile {

struct Error {  // CUfileError_t
  int err;      // CUfileOpError; 0 is CU_FILE_SUCCESS
  int cu_err;   // CUresult, for CUDA driver errors
};

enum HandleType { kHandleTypeOpaqueFd = 1 };  // CU_FILE_HANDLE_TYPE_OPAQUE_FD

struct Descr {  // CUfileDescr_t
  int type;
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;  // CUfileFSOps_t*; nullptr: discover with fstat
};

using Handle = void*;       // CUfileHandle_t
using BatchHandle = void*;  // CUfileBatchHandle_t

enum Opcode { kRead = 0, kWrite = 1 };  // CUfileOpcode_t
enum BatchMode { kBatch = 1 };          // CUfileBatchMode_t
enum IoStatus {                         // CUfileStatus_t
  kWaiting = 0x1,
  kPending = 0x2,
  kInvalid = 0x4,
  kCanceled = 0x8,
  kComplete = 0x10,
  kTimeout = 0x20,
  kFailed = 0x40,
};

struct IoParams {  // CUfileIOParams_t
  BatchMode mode;  // must be first
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  Handle fh;
  Opcode opcode;
  void* cookie;
};

struct IoEvents {  // CUfileIOEvents_t
  void* cookie;
  IoStatus status;
  size_t ret;  // bytes transferred, or a negative error as size_t
};

}  // namespace cufile

struct CuFileApi {
  cufile::Error (*driver_open)();
  cufile::Error (*driver_close)();
  cufile::Error (*handle_register)(cufile::Handle*, cufile::Descr*);
  void (*handle_deregister)(cufile::Handle);
  cufile::Error (*buf_register)(const void*, size_t, int);
  cufile::Error (*buf_deregister)(const void*);
  ssize_t (*read)(cufile::Handle, void*, size_t, off_t, off_t);
  // Optional (nullptr when the library has no batch API).
  cufile::Error (*batch_setup)(cufile::BatchHandle*, unsigned);
  cufile::Error (*batch_submit)(cufile::BatchHandle, unsigned, cufile::IoParams*, unsigned);
  cufile::Error (*batch_get_status)(cufile::BatchHandle, unsigned, unsigned*, cufile::IoEvents*,
                                    struct timespec*);
  void (*batch_destroy)(cufile::BatchHandle);
  std::string library;  // the file that was loaded

  bool has_batch() const { return batch_setup && batch_submit && batch_get_status && batch_destroy; }

  // The process-wide table, or Unavailable naming why (no library, missing symbol, driver).
  static Result<const CuFileApi*> load();
};

std::string cufile_error_string(cufile::Error e);

// How cuFile moves bytes on this host. kDirect: the nvidia-fs driver is loaded, so reads are
// peer-to-peer DMA from the drive into GPU memory. kCompat: without it cuFile runs in compatibility
// mode, reading into a bounce buffer in host memory and copying that to the GPU, so every byte
// crosses host memory once more (counted as a host copy, like the odirect-bounce path's).
// Kernel P2PDMA without nvidia-fs (cuFile 1.14+ on some drives) is reported as kCompat: what
// cuFile chose then is not visible from outside; gds rows say "(assumed)" for that reason.
enum class GdsMode { kDirect, kCompat };
// Looks for nvidia-fs in proc_driver_dir ("/proc/driver/nvidia-fs"); tests pass their own.
GdsMode detect_gds_mode(const std::string& proc_driver_dir = "/proc/driver");
std::string gds_mode_description(GdsMode mode);

}  // namespace tempokv
