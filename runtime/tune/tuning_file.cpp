// TuningFile (see tuning_file.hpp): tuning.json as {"version": 1, "entries": [...], "protocols": [...],
// "libraries": [...]} ("protocols" and "libraries" may be absent: files written before protocol or library tuning).
#include "runtime/tune/tuning_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"

namespace canopy {

std::uint64_t tuning_bucket(std::uint64_t bytes) {
  std::uint64_t b = 1;
  if (bytes == 0) return 0;
  while (b <= bytes / 2) b *= 2;
  return b;
}

std::filesystem::path TuningFile::default_path(const std::filesystem::path& cache_directory) {
  if (const char* chosen = std::getenv("CANOPY_TUNING"); chosen && *chosen) return chosen;
  return cache_directory / "tuning.json";
}

const char* to_string(Library library) { return library == Library::nccl ? "nccl" : "canopy"; }

TuningFile::TuningFile(std::filesystem::path path, std::string* warning) : path_(std::move(path)) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;  // not tuned yet
  std::ostringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    if (j.at("version").get<int>() != 1) throw std::runtime_error("version is not 1");
    for (const nlohmann::json& e : j.at("entries")) {
      const std::optional<Collective> c = parse_collective(e.at("collective").get<std::string>());
      const std::optional<DataType> t = parse_data_type(e.at("dtype").get<std::string>());
      if (!c || !t) throw std::runtime_error("unknown collective or dtype");
      const std::int64_t chunk = e.at("chunk_bytes").get<std::int64_t>();
      if (chunk < 16 || chunk % 16 != 0) throw std::runtime_error(fmt::format("chunk_bytes {}", chunk));
      entries_[TuningKey{e.at("machine").get<std::string>(), *c, *t, e.at("bucket_bytes").get<std::uint64_t>()}] =
          TuningEntry{e.value("topology", ""), chunk, e.value("time_us", 0.0), e.value("default_time_us", 0.0)};
    }
    for (const nlohmann::json& e : j.value("protocols", nlohmann::json::array())) {
      const std::optional<Collective> c = parse_collective(e.at("collective").get<std::string>());
      const std::optional<DataType> t = parse_data_type(e.at("dtype").get<std::string>());
      if (!c || !t) throw std::runtime_error("unknown collective or dtype");
      const ProtocolLimits l{e.at("ll_bytes").get<std::int64_t>(), e.at("ll128_bytes").get<std::int64_t>(),
                             e.at("direct_bytes").get<std::int64_t>()};
      if (l.ll_bytes < 0 || l.ll128_bytes < 0 || l.direct_bytes < 0)
        throw std::runtime_error(fmt::format("a negative protocol limit for {}", to_string(*c)));
      protocols_[ProtocolKey{e.at("machine").get<std::string>(), *c}] =
          ProtocolEntry{e.value("topology", ""), *t, l, e.value("cost", 0.0), e.value("untuned_cost", 0.0)};
    }
    for (const nlohmann::json& e : j.value("libraries", nlohmann::json::array())) {
      const std::optional<Collective> c = parse_collective(e.at("collective").get<std::string>());
      const std::optional<DataType> t = parse_data_type(e.at("dtype").get<std::string>());
      if (!c || !t) throw std::runtime_error("unknown collective or dtype");
      const std::string library = e.at("library").get<std::string>();
      if (library != "canopy" && library != "nccl")
        throw std::runtime_error(fmt::format("library \"{}\" is neither canopy nor nccl", library));
      LibraryEntry l;
      l.topology = e.value("topology", "");
      l.library = library == "nccl" ? Library::nccl : Library::canopy;
      l.rounds = e.value("rounds", 0);
      l.canopy_us = e.value("canopy_us", 0.0);
      l.canopy_min_us = e.value("canopy_min_us", 0.0);
      l.canopy_max_us = e.value("canopy_max_us", 0.0);
      l.nccl_us = e.value("nccl_us", 0.0);
      l.nccl_min_us = e.value("nccl_min_us", 0.0);
      l.nccl_max_us = e.value("nccl_max_us", 0.0);
      l.nccl_version = e.value("nccl_version", "");
      libraries_[TuningKey{e.at("machine").get<std::string>(), *c, *t, e.at("bucket_bytes").get<std::uint64_t>()}] = l;
    }
  } catch (const std::exception& e) {
    entries_.clear();
    protocols_.clear();
    libraries_.clear();
    if (warning)
      *warning = fmt::format("tuning file {} ignored ({}): rerun `canopy tune` to rewrite it", path_.string(), e.what());
  }
}

std::optional<TuningEntry> TuningFile::find(const TuningKey& key) const {
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  return std::nullopt;
}

void TuningFile::set(const TuningKey& key, const TuningEntry& entry) { entries_[key] = entry; }

std::optional<ProtocolEntry> TuningFile::find(const ProtocolKey& key) const {
  if (auto it = protocols_.find(key); it != protocols_.end()) return it->second;
  return std::nullopt;
}

void TuningFile::set(const ProtocolKey& key, const ProtocolEntry& entry) { protocols_[key] = entry; }
void TuningFile::erase(const ProtocolKey& key) { protocols_.erase(key); }

std::optional<LibraryEntry> TuningFile::find_library(const TuningKey& key) const {
  if (auto it = libraries_.find(key); it != libraries_.end()) return it->second;
  return std::nullopt;
}
void TuningFile::set_library(const TuningKey& key, const LibraryEntry& entry) { libraries_[key] = entry; }

void TuningFile::save() const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& [k, e] : entries_)
    list.push_back({{"topology", e.topology},
                    {"machine", k.machine},
                    {"collective", to_string(k.collective)},
                    {"dtype", to_string(k.dtype)},
                    {"bucket_bytes", k.bucket_bytes},
                    {"chunk_bytes", e.chunk_bytes},
                    {"time_us", e.time_us},
                    {"default_time_us", e.default_time_us}});
  nlohmann::ordered_json protocols = nlohmann::ordered_json::array();
  for (const auto& [k, e] : protocols_)
    protocols.push_back({{"topology", e.topology},
                         {"machine", k.machine},
                         {"collective", to_string(k.collective)},
                         {"dtype", to_string(e.dtype)},
                         {"ll_bytes", e.limits.ll_bytes},
                         {"ll128_bytes", e.limits.ll128_bytes},
                         {"direct_bytes", e.limits.direct_bytes},
                         {"cost", e.cost},
                         {"untuned_cost", e.untuned_cost}});
  nlohmann::ordered_json libraries = nlohmann::ordered_json::array();
  for (const auto& [k, e] : libraries_)
    libraries.push_back({{"topology", e.topology},
                         {"machine", k.machine},
                         {"collective", to_string(k.collective)},
                         {"dtype", to_string(k.dtype)},
                         {"bucket_bytes", k.bucket_bytes},
                         {"library", to_string(e.library)},
                         {"rounds", e.rounds},
                         {"canopy_us", e.canopy_us},
                         {"canopy_min_us", e.canopy_min_us},
                         {"canopy_max_us", e.canopy_max_us},
                         {"nccl_us", e.nccl_us},
                         {"nccl_min_us", e.nccl_min_us},
                         {"nccl_max_us", e.nccl_max_us},
                         {"nccl_version", e.nccl_version}});
  const nlohmann::ordered_json j = {
      {"version", 1}, {"entries", list}, {"protocols", protocols}, {"libraries", libraries}};
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  const std::filesystem::path tmp = path_.string() + fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!(out << j.dump(1) << "\n"))
      throw Error(fmt::format("cannot write the tuning file {}: check the directory's permissions", tmp.string()));
  }
  std::filesystem::rename(tmp, path_, ec);
  if (ec) throw Error(fmt::format("cannot write the tuning file {}: {}", path_.string(), ec.message()));
}

}  // namespace canopy
