// Opens an input by its kind: a bundle directory, or a tensor file recognised by its extension
// (and, for zip-based formats, its signature).
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "compare/tensor.h"
#include "util/json_fields.h"
#include "util/json_number.h"
#include "util/strings.h"

namespace dt::compare {

namespace {

namespace fs = std::filesystem;

Result<const MappedFile*> Map(TensorFile& tf, const fs::path& path) {
  auto m = MappedFile::Open(path);
  if (!m) return m.take_error();
  tf.maps.push_back(std::make_unique<MappedFile>(std::move(*m)));
  return tf.maps.back().get();
}

Status ReadMetrics(const fs::path& path, TensorFile& tf) {
  auto m = Map(tf, path);
  if (!m) return m.take_error();
  std::string_view text = (*m)->view();
  std::int64_t line_no = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_no;
    line = Trim(line);
    if (line.empty()) continue;
    // NaN and infinities (a diverged loss) come as "NaN" strings or Python's bare tokens.
    auto parsed = ParseJson(QuoteNonFiniteTokens(line), path.string(), line_no);
    if (!parsed.ok()) return parsed.take_error();
    const nlohmann::json& j = *parsed;
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("value") ||
        !JsonNumberOrNonFinite(j["value"])) {
      return MakeError(ErrorCode::kInput, "metrics row lacks a string name or a numeric value",
                       path.string(), line_no);
    }
    MetricPoint p;
    p.name = j["name"].get<std::string>();
    p.value = *JsonNumberOrNonFinite(j["value"]);
    p.step =
        j.contains("step") && j["step"].is_number_integer() ? j["step"].get<std::int64_t>() : 0;
    tf.metrics.push_back(std::move(p));
  }
  tf.has_metrics = true;
  return OkStatus();
}

// One tensor file by its extension: the reader for it, or an error naming the file.
Status ReadByExtension(const MappedFile& f, const std::string& path, std::string& kind,
                       std::vector<TensorInfo>& out) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Status s = OkStatus();
  if (EndsWith(lower, ".safetensors")) {
    kind = "safetensors";
    s = ReadSafetensors(f.data(), f.size(), path, "", out);
  } else if (EndsWith(lower, ".npy")) {
    kind = "npy";
    s = ReadNpy(f.data(), f.size(), path, fs::path(path).stem().string(), out);
  } else if (EndsWith(lower, ".npz")) {
    kind = "npz";
    s = ReadNpz(f.data(), f.size(), path, out);
  } else if (EndsWith(lower, ".pt") || EndsWith(lower, ".pth") || EndsWith(lower, ".bin") ||
             EndsWith(lower, ".ckpt")) {
    kind = "pt";
    s = ReadTorchZip(f.data(), f.size(), path, out);
  } else {
    return MakeError(
        ErrorCode::kInput,
        "unknown tensor file type (expected a bundle directory, a folder of checkpoint "
        "shards, .safetensors, .npy, .npz, .pt or .pth)",
        path);
  }
  if (!s) {
    // A header read as zeros because the file shrank under the map is "changed", not "corrupt".
    if (auto st = f.CheckUnchanged(); !st) return st.take_error();
    return s.take_error();
  }
  return OkStatus();
}

bool IsShardName(const std::string& name) {
  return EndsWith(name, ".safetensors") || EndsWith(name, ".bin") || EndsWith(name, ".pt") ||
         EndsWith(name, ".pth");
}

// A checkpoint as people keep them: a folder with an index (`model.safetensors.index.json`,
// `pytorch_model.bin.index.json`: {"weight_map": {tensor: shard file}}) or, without one, a folder
// of shard files. Read as one state dict; a tensor in two shards, a shard outside the folder, or a
// mapped tensor its shard lacks is an error that names the file.
// A checkpoint index's weight_map (tensor -> shard) and its shards in order of first mention.
Status ReadShardIndex(const fs::path& index, TensorFile& tf,
                      std::map<std::string, std::string>& weight_map,
                      std::vector<std::string>& shards) {
  auto m = Map(tf, index);
  if (!m) return m.take_error();
  if (auto depth = CheckJsonDepth((*m)->view(), index.string()); !depth) return depth;
  nlohmann::json doc = nlohmann::json::parse((*m)->view(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("weight_map") ||
      !doc["weight_map"].is_object())
    return MakeError(ErrorCode::kInput,
                     "not a checkpoint index: expected JSON with a \"weight_map\" object",
                     index.string());
  for (const auto& [tensor, shard] : doc["weight_map"].items()) {
    if (!shard.is_string())
      return MakeError(ErrorCode::kInput,
                       "weight_map[\"" + EscapeControl(tensor) + "\"] is not a file name",
                       index.string());
    const std::string file = shard.get<std::string>();
    const fs::path rel = fs::path(file).lexically_normal();
    if (file.empty() || rel.is_absolute() || (!rel.empty() && *rel.begin() == ".."))
      return MakeError(ErrorCode::kInput,
                       "shard '" + EscapeControl(file) + "' is not inside the checkpoint folder",
                       index.string());
    weight_map[tensor] = rel.generic_string();
    if (std::find(shards.begin(), shards.end(), rel.generic_string()) == shards.end())
      shards.push_back(rel.generic_string());
  }
  return OkStatus();
}

// Without an index: the .safetensors files when there are any (a trainer's folder also holds
// training_args.bin, optimizer.pt, scheduler.pt, rng_state.pth: not weights), else the others
// but those.
std::vector<std::string> ShardsInFolder(const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> safetensors, others;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    std::string name = it->path().filename().string();
    if (!it->is_regular_file(ec2) || !IsShardName(name) || name[0] == '.') continue;
    if (EndsWith(name, ".safetensors"))
      safetensors.push_back(name);
    else if (!StartsWith(name, "training_args") && !StartsWith(name, "optimizer") &&
             !StartsWith(name, "scheduler") && !StartsWith(name, "rng_state") &&
             !StartsWith(name, "scaler"))
      others.push_back(name);
  }
  return safetensors.empty() ? others : safetensors;
}

// Reads every shard's tensors into tf; with an index, each tensor only from the shard the index
// names, and every indexed tensor must be found.
Status ReadShardTensors(const fs::path& dir, const fs::path& index,
                        const std::map<std::string, std::string>& weight_map,
                        const std::vector<std::string>& shards, TensorFile& tf) {
  std::error_code ec;
  std::map<std::string, std::string> seen;  // tensor -> the shard it came from.
  for (const auto& shard : shards) {
    const fs::path file = dir / shard;
    if (!fs::is_regular_file(file, ec))
      return MakeError(ErrorCode::kInput,
                       "shard '" + EscapeControl(shard) + "' " +
                           (index.empty() ? "is not a file" : "named by the index is missing"),
                       (index.empty() ? dir : index).string());
    auto m = Map(tf, file);
    if (!m) return m.take_error();
    std::vector<TensorInfo> part;
    std::string kind;
    if (auto st = ReadByExtension(**m, file.string(), kind, part); !st) return st.take_error();
    for (auto& t : part) {
      if (!index.empty()) {
        auto w = weight_map.find(t.name);
        if (w == weight_map.end() || w->second != shard)
          continue;  // Not this shard's, by the index.
      }
      auto [it, fresh] = seen.emplace(t.name, shard);
      if (!fresh)
        return MakeError(ErrorCode::kInput,
                         "tensor '" + EscapeControl(t.name) + "' is in two shards (" + it->second +
                             " and " + shard + ")",
                         dir.string());
      tf.tensors.push_back(std::move(t));
    }
  }
  for (const auto& [tensor, shard] : weight_map)
    if (!seen.count(tensor))
      return MakeError(ErrorCode::kInput,
                       "tensor '" + EscapeControl(tensor) + "' is mapped to " + shard +
                           ", which does not hold it",
                       index.string());
  return OkStatus();
}

Result<bool> ReadShards(const fs::path& dir, TensorFile& tf) {
  std::error_code ec;
  fs::path index;
  for (const char* name : {"model.safetensors.index.json", "pytorch_model.bin.index.json"})
    if (fs::is_regular_file(dir / name, ec)) {
      index = dir / name;
      break;
    }
  std::vector<std::string> shards;
  std::map<std::string, std::string> weight_map;  // tensor -> shard, from the index.
  if (!index.empty()) {
    if (auto st = ReadShardIndex(index, tf, weight_map, shards); !st) return st.take_error();
  } else {
    shards = ShardsInFolder(dir);
  }
  if (shards.empty()) return false;
  std::sort(shards.begin(), shards.end());
  if (auto st = ReadShardTensors(dir, index, weight_map, shards, tf); !st) return st.take_error();
  tf.kind = "sharded";
  return true;
}

}  // namespace

Result<TensorFile> OpenTensorFile(const std::string& path) {
  TensorFile tf;
  tf.path = path;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return MakeError(ErrorCode::kInput, "no such file or directory", path);
  }
  if (fs::is_directory(st)) {
    tf.kind = "bundle";
    fs::path dir(path);
    bool any = false;
    if (fs::exists(dir / "tensors.safetensors", ec)) {
      auto m = Map(tf, dir / "tensors.safetensors");
      if (!m) return m.take_error();
      if (auto s = ReadSafetensors((*m)->data(), (*m)->size(), (*m)->path(), "", tf.tensors); !s) {
        return s.take_error();
      }
      any = true;
    }
    if (fs::exists(dir / "metrics.jsonl", ec)) {
      if (auto s = ReadMetrics(dir / "metrics.jsonl", tf); !s) return s.take_error();
      any = true;
    }
    if (!any && !fs::exists(dir / "manifest.json", ec)) {
      auto sharded = ReadShards(dir, tf);
      if (!sharded) return sharded.take_error();
      if (*sharded) return tf;
      return MakeError(ErrorCode::kInput,
                       "directory is neither a dualtrack bundle (no manifest.json, "
                       "tensors.safetensors or metrics.jsonl) nor a checkpoint folder (no "
                       "*.index.json, no .safetensors / .bin / .pt shards)",
                       path);
    }
    return tf;
  }
  auto m = Map(tf, path);
  if (!m) return m.take_error();
  if (auto st = ReadByExtension(**m, path, tf.kind, tf.tensors); !st) return st.take_error();
  return tf;
}

}  // namespace dt::compare
