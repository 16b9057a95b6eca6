#include "coverage/rules.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/strings.h"

namespace dt::coverage {

Result<Rules> LoadRules(const std::filesystem::path& path) {
  auto text = ReadFile(path, 16u << 20);
  if (!text) return text.take_error();
  Rules rules;
  try {
    auto j = nlohmann::json::parse(*text);
    for (const auto& v : j.at("variants")) {
      VariantRule r;
      r.from = v.at("from").get<std::vector<std::string>>();
      r.to = v.at("to").get<std::vector<std::string>>();
      r.why = v.at("why").get<std::string>();
      rules.variants.push_back(std::move(r));
    }
    for (const auto& d : j.at("dtypes")) {
      DtypeRule r;
      r.dtype = d.at("dtype").get<std::string>();
      r.below_macos = d.value("below_macos", 0);
      r.issue = d.at("issue").get<std::string>();
      r.error = d.at("error").get<std::string>();
      rules.dtypes.push_back(std::move(r));
    }
    rules.max_ndim = j.at("max_ndim").at("limit").get<int>();
    rules.ndim_error = j.at("max_ndim").at("error").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kInput, std::string("coverage rules: ") + e.what(), path.string());
  }
  return rules;
}

std::string NormalizeDtype(std::string_view dtype) {
  std::string d(Trim(dtype));
  if (StartsWith(d, "torch.")) d = d.substr(6);
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  if (d == "double") return "float64";
  if (d == "float") return "float32";
  if (d == "half") return "float16";
  if (d == "bf16") return "bfloat16";
  if (d == "cdouble" || d == "complexdouble") return "complex128";
  if (d == "cfloat" || d == "complexfloat") return "complex64";
  return d;
}

std::vector<std::string> DtypeIssues(const Rules& rules, const std::vector<std::string>& dtypes,
                                     std::int64_t max_ndim, int macos, bool* fails) {
  std::vector<std::string> out;
  for (const std::string& raw : dtypes) {
    std::string d = NormalizeDtype(raw);
    for (const DtypeRule& r : rules.dtypes) {
      if (r.dtype != d || (r.below_macos != 0 && macos >= r.below_macos)) continue;
      std::string text = r.issue + ": \"" + r.error + "\"";
      if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
      *fails = true;
    }
  }
  if (max_ndim > rules.max_ndim) {
    std::string err = rules.ndim_error;
    std::size_t at = err.find("{ndim}");
    if (at != std::string::npos) err.replace(at, 6, std::to_string(max_ndim));
    out.push_back(err);
    *fails = true;
  }
  return out;
}

const VariantRule* FindVariant(const Rules& rules, const std::string& key) {
  for (const VariantRule& r : rules.variants) {
    for (const std::string& f : r.from) {
      if (f == key) return &r;
      // A rule naming the base operator covers all its overloads.
      if (f.find('.') == std::string::npos && StartsWith(key, f) && key.size() > f.size() &&
          key[f.size()] == '.') {
        return &r;
      }
    }
  }
  return nullptr;
}

}  // namespace dt::coverage
