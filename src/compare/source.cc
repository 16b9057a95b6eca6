// Opens an input by its kind: a bundle directory, or a tensor file recognised by its extension
// (and, for zip-based formats, its signature).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "compare/tensor.h"
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
    try {
      // NaN and infinities (a diverged loss) come as "NaN" strings or Python's bare tokens.
      auto j = nlohmann::json::parse(QuoteNonFiniteTokens(line));
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
    } catch (const nlohmann::json::exception& e) {
      return MakeError(ErrorCode::kInput, std::string("metrics row is not valid JSON: ") + e.what(),
                       path.string(), line_no);
    }
  }
  tf.has_metrics = true;
  return OkStatus();
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
      return MakeError(ErrorCode::kInput,
                       "directory is not a dualtrack bundle (no manifest.json, tensors.safetensors "
                       "or metrics.jsonl)",
                       path);
    }
    return tf;
  }
  auto m = Map(tf, path);
  if (!m) return m.take_error();
  const MappedFile& f = **m;
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Status s = OkStatus();
  if (EndsWith(lower, ".safetensors")) {
    tf.kind = "safetensors";
    s = ReadSafetensors(f.data(), f.size(), path, "", tf.tensors);
  } else if (EndsWith(lower, ".npy")) {
    tf.kind = "npy";
    std::string stem = fs::path(path).stem().string();
    s = ReadNpy(f.data(), f.size(), path, stem, tf.tensors);
  } else if (EndsWith(lower, ".npz")) {
    tf.kind = "npz";
    s = ReadNpz(f.data(), f.size(), path, tf.tensors);
  } else if (EndsWith(lower, ".pt") || EndsWith(lower, ".pth") || EndsWith(lower, ".bin") ||
             EndsWith(lower, ".ckpt")) {
    tf.kind = "pt";
    s = ReadTorchZip(f.data(), f.size(), path, tf.tensors);
  } else {
    return MakeError(ErrorCode::kInput,
                     "unknown tensor file type (expected a bundle directory, .safetensors, .npy, "
                     ".npz, .pt or .pth)",
                     path);
  }
  if (!s) {
    // A header read as zeros because the file shrank under the map is "changed", not "corrupt".
    if (auto st = f.CheckUnchanged(); !st) return st.take_error();
    return s.take_error();
  }
  return tf;
}

}  // namespace dt::compare
