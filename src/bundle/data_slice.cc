// The data slice a run used, recorded in its manifest so that two tracks (and the baseline) can be
// shown to share it: without it, validity stays unknown and a measured `mac-ready` is unreachable.
#include "bundle/bundle.h"
#include "env/freeze.h"
#include "env/hash.h"

namespace dt::bundle {

Result<nlohmann::json> DataSliceRecord(const RunOptions& options,
                                       const std::filesystem::path& base) {
  nlohmann::json data = nullptr;
  if (!options.data.empty()) {
    // Hashed exactly as `dualtrack freeze --data` does, relative to the same folder, so the digests
    // of a freeze and a run from the project root are equal for the same files.
    auto collected = env::CollectDataFiles(options.data, base);
    if (!collected.ok()) return collected.take_error();
    if (auto st = env::HashDataFiles(collected->files); !st.ok()) return st.take_error();
    data = {{"digest", env::DataDigest(collected->files)},
            {"files", collected->files.size()},
            {"roots", options.data},
            {"source", "hashed"}};
  }
  if (options.baseline) {
    auto b = env::LoadBaseline(*options.baseline);
    if (!b.ok()) return b.take_error();
    if (b->data_digest.empty()) {
      return MakeError(ErrorCode::kInput,
                       "the baseline records no data-slice digest (freeze it "
                       "with --data)",
                       options.baseline->string());
    }
    if (data.is_object() && data["digest"] != b->data_digest) {
      return MakeError(ErrorCode::kInput,
                       "the --data files differ from the baseline's data slice (digest " +
                           data["digest"].get<std::string>().substr(0, 12) + " vs " +
                           b->data_digest.substr(0, 12) + ")",
                       options.baseline->string());
    }
    if (!data.is_object()) {
      data = {{"digest", b->data_digest}, {"files", b->data.size()}, {"source", "baseline"}};
    }
    data["baseline"] = options.baseline->string();
  }
  return data;
}

}  // namespace dt::bundle
