// The frame rank 0 broadcasts over MPI to bootstrap NCCL: the ncclUniqueId plus what every rank
// must agree on. CUDA-free, so the framing is tested on any machine.
//   NcclFrame f = frame_unique_id(id_bytes, ncclGetVersion(), nranks);  MPI_Bcast(&f, sizeof f, ...);
//   std::string err = check_frame(f, my_version, my_nranks);   // "" when it may be used
// Why more than the 128 id bytes: ranks linked against different NCCL versions, or a stale
// broadcast from another communicator, would otherwise hang inside ncclCommInitRank with no
// message; a magic, the version and a checksum turn that into a clear error at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace tapestry::comm {

constexpr size_t kNcclIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

struct NcclFrame {
  char magic[8];
  int32_t nccl_version;
  int32_t nranks;
  char id[kNcclIdBytes];
  uint64_t checksum;  // FNV-1a over everything before it
};

inline uint64_t frame_checksum(const NcclFrame& f) {
  uint64_t h = 1469598103934665603ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(&f);
  for (size_t i = 0; i < offsetof(NcclFrame, checksum); ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

inline NcclFrame frame_unique_id(const char* id, int version, int nranks) {
  NcclFrame f;
  std::memset(&f, 0, sizeof f);
  std::memcpy(f.magic, "TPNCCL1", 8);
  f.nccl_version = version;
  f.nranks = nranks;
  std::memcpy(f.id, id, kNcclIdBytes);
  f.checksum = frame_checksum(f);
  return f;
}

inline std::string check_frame(const NcclFrame& f, int version, int nranks) {
  if (std::memcmp(f.magic, "TPNCCL1", 8) != 0) return "not a Tapestry NCCL bootstrap frame";
  if (f.checksum != frame_checksum(f)) return "NCCL bootstrap frame corrupted (checksum)";
  if (f.nccl_version != version)
    return "NCCL version mismatch: rank 0 has " + std::to_string(f.nccl_version) + ", this rank " +
           std::to_string(version);
  if (f.nranks != nranks)
    return "NCCL communicator size mismatch: " + std::to_string(f.nranks) + " vs " + std::to_string(nranks);
  return "";
}

}  // namespace tapestry::comm
