#include "fix/fixer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fix/diff.h"
#include "fix/verify.h"
#include "scan/notebook_scanner.h"
#include "scan/python_scanner.h"
#include "scan/sink.h"
#include "scan/test_registry.h"
#include "util/fs.h"
#include "util/scoped_dir.h"

namespace dt::fix {
namespace {

using scan::testing::Reg;

std::vector<scan::Finding> ScanOf(std::string_view src) {
  std::vector<scan::Finding> findings;
  scan::FindingSink sink(Reg(), "t.py", src, findings);
  scan::ScanPython(src, sink, false);
  return findings;
}

// `all`: portable lines too (`fix --all`).
FileFix FixOf(const std::string& src, bool unsafe = false, bool all = false) {
  FixOptions opt;
  opt.unsafe = unsafe;
  opt.all = all;
  return FixPython(src, ScanOf(src), opt);
}

std::string Fixed(const std::string& src, bool unsafe = false, bool all = false) {
  return FixOf(src, unsafe, all).text;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t Count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Every fix: the second run finds nothing left to change.
void ExpectIdempotent(const std::string& src, bool unsafe = false, bool all = false) {
  const std::string once = Fixed(src, unsafe, all);
  EXPECT_EQ(Fixed(once, unsafe, all), once) << once;
}

TEST(FixTest, DotCudaKeepsCommentsKeywordsAndIndexes) {
  const std::string src =
      "import torch\n"
      "\n"
      "x = torch.zeros(2).cuda()  # on the GPU\n"
      "y = torch.ones(2).cuda(non_blocking=True)\n"
      "z = torch.ones(2).cuda(1)\n"
      "w = model.cuda(device=args.gpu, non_blocking=True)\n"
      "v = torch.ones(2).cuda(0, True)\n";
  const FileFix fix = FixOf(src);
  EXPECT_TRUE(Has(fix.text, "x = torch.zeros(2).to(_dualtrack_device())  # on the GPU\n"));
  EXPECT_TRUE(Has(fix.text, "y = torch.ones(2).to(_dualtrack_device(), non_blocking=True)\n"));
  // A device index: the same CUDA device with CUDA (cuda:1), the Mac's GPU or the CPU without.
  EXPECT_TRUE(Has(fix.text, "z = torch.ones(2).to(_dualtrack_device(1))\n"));
  EXPECT_TRUE(
      Has(fix.text, "w = model.to(device=_dualtrack_device(args.gpu), non_blocking=True)\n"));
  // .to(i, True) would read True as a dtype: left.
  EXPECT_TRUE(Has(fix.text, "v = torch.ones(2).cuda(0, True)\n"));
  EXPECT_EQ(Count(fix.text, "def _dualtrack_device("), 1u);
  EXPECT_EQ(Count(fix.text, "import torch\n"), 1u);
  ASSERT_EQ(fix.outcomes.size(), 5u);
  EXPECT_EQ(fix.fixed(), 4u);
  EXPECT_TRUE(Has(fix.outcomes[4].note, "left for review"));
  // The helper comes after the imports, before the first use, PEP 8 spaced.
  EXPECT_LT(fix.text.find("def _dualtrack_device("), fix.text.find("x = torch.zeros"));
  EXPECT_TRUE(Has(fix.text, "import torch\n\n\ndef _dualtrack_device("));
  EXPECT_TRUE(Has(fix.text, "    return \"cpu\"\n\n\nx = torch.zeros"));
  ExpectIdempotent(src);
}

TEST(FixTest, EveryLikeConstructOfTheReportedStatement) {
  // The scan reports one DT101 for the statement; the fix covers all three calls.
  const std::string src =
      "import torch\n"
      "\n"
      "points, label, target = points.float().cuda(), label.long().cuda(), target.long().cuda()\n"
      "y = a.cuda() if torch.cuda.is_available() else a.cuda()\n";
  const std::string out = Fixed(src);
  EXPECT_TRUE(Has(out,
                  "points, label, target = points.float().to(_dualtrack_device()), "
                  "label.long().to(_dualtrack_device()), target.long().to(_dualtrack_device())\n"));
  ExpectIdempotent(src);
}

TEST(FixTest, DeviceStringsWhereADeviceIsChosen) {
  const std::string src =
      "import torch\n"
      "\n"
      "device = 'cuda:1'\n"
      "a = torch.zeros(1, device=\"cuda\")\n"
      "b = torch.device(\"cuda\")\n"
      "c = a.to(\"cuda\")\n"
      "\n"
      "\n"
      "def build(device=\"cuda\"):\n"
      "    return device\n";
  const std::string out = Fixed(src);
  EXPECT_TRUE(Has(out, "device = _dualtrack_device(1)\n"));
  EXPECT_TRUE(Has(out, "a = torch.zeros(1, device=_dualtrack_device())\n"));
  EXPECT_TRUE(Has(out, "b = torch.device(_dualtrack_device())\n"));
  EXPECT_TRUE(Has(out, "c = a.to(_dualtrack_device())\n"));
  EXPECT_TRUE(Has(out, "def build(device=_dualtrack_device()):\n"));
  ExpectIdempotent(src);
}

TEST(FixTest, TheModulesOwnDeviceVariableIsReused) {
  const std::string src =
      "import torch\n"
      "\n"
      "x = torch.zeros(2).cuda()  # before the choice: the helper\n"
      "DEVICE = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"
      "\n"
      "\n"
      "def step(model, batch):\n"
      "    return model(batch.cuda()), torch.ones(1, device=\"cuda\")\n";
  const std::string out = Fixed(src);
  EXPECT_TRUE(
      Has(out, "x = torch.zeros(2).to(_dualtrack_device())  # before the choice: the helper\n"))
      << out;
  EXPECT_TRUE(Has(out, "    return model(batch.to(DEVICE)), torch.ones(1, device=DEVICE)\n"));
  ExpectIdempotent(src);
  // Bound again elsewhere (a parameter here): not the module's one choice any more.
  const std::string shadowed = src + "\n\ndef other(DEVICE):\n    return DEVICE\n";
  const std::string out2 = Fixed(shadowed);
  EXPECT_TRUE(Has(out2,
                  "    return model(batch.to(_dualtrack_device())), torch.ones(1, "
                  "device=_dualtrack_device())\n"))
      << out2;
}

TEST(FixTest, DeviceIndexesBecomeTheSameCudaDevice) {
  const std::string src =
      "import torch\n"
      "from transformers import AutoModelForCausalLM\n"
      "\n"
      "d = torch.device(\"cuda\", args.local_rank)\n"
      "e = torch.device('cuda', index=1)\n"
      "x = torch.zeros(2).to(args.gpu, non_blocking=True)\n"
      "m = AutoModelForCausalLM.from_pretrained(\"m\", device_map={\"\": local_rank})\n"
      "ddp = torch.nn.parallel.DistributedDataParallel(m, device_ids=[args.gpu])\n";
  const FileFix fix = FixOf(src);
  EXPECT_TRUE(Has(fix.text, "d = torch.device(_dualtrack_device(args.local_rank))\n")) << fix.text;
  EXPECT_TRUE(Has(fix.text, "e = torch.device(_dualtrack_device(1))\n"));
  EXPECT_TRUE(
      Has(fix.text, "x = torch.zeros(2).to(_dualtrack_device(args.gpu), non_blocking=True)\n"));
  EXPECT_TRUE(Has(fix.text, "device_map={\"\": _dualtrack_device(local_rank)})\n"));
  // DDP's device_ids must be None off CUDA, not a device: left, and said why.
  EXPECT_TRUE(Has(fix.text, "device_ids=[args.gpu])\n"));
  bool ddp_note = false;
  for (const auto& o : fix.outcomes) ddp_note |= !o.fixed && Has(o.note, "device_ids");
  EXPECT_TRUE(ddp_note);
  ExpectIdempotent(src);
}

TEST(FixTest, AttentionLibrariesBecomeSdpaOnlyWhenUnsafe) {
  const std::string src =
      "import torch\n"
      "import xformers.ops as xops\n"
      "from flash_attn import flash_attn_func  # fast\n"
      "\n"
      "\n"
      "def attend(qkv, bias):\n"
      "    q, k, v = xops.unbind(qkv, 2)\n"
      "    a = xops.memory_efficient_attention(q, k, v, attn_bias=bias, p=0.1)\n"
      "    b = flash_attn_func(q, k, v, 0.0, None, True)\n"
      "    return a + b\n";
  EXPECT_EQ(Fixed(src), src);  // Results may change: only with --unsafe-fixes.
  const std::string out = Fixed(src, /*unsafe=*/true);
  // Every use now runs through SDPA: the imports would be dead code (ruff F401), so they go.
  EXPECT_FALSE(Has(out, "import xformers")) << out;
  EXPECT_FALSE(Has(out, "from flash_attn import")) << out;
  EXPECT_TRUE(Has(out, "    q, k, v = torch.unbind(qkv, 2)\n"));
  EXPECT_TRUE(Has(out, "    a = _dualtrack_attention(q, k, v, attn_bias=bias, dropout_p=0.1)\n"));
  EXPECT_TRUE(
      Has(out, "    b = _dualtrack_attention(q, k, v, dropout_p=0.0, scale=None, causal=True)\n"));
  EXPECT_EQ(Count(out, "def _dualtrack_attention("), 1u);
  // The helper comes after the imports, not between them.
  EXPECT_LT(out.find("import torch\n"), out.find("def _dualtrack_attention("));
  ExpectIdempotent(src, true);
  // A use the fix leaves (behind a CUDA check) keeps the import, in try/except ImportError.
  const std::string kept =
      "import torch\n"
      "from flash_attn import flash_attn_func\n"
      "\n"
      "\n"
      "def attend(q, k, v):\n"
      "    if torch.cuda.is_available():\n"
      "        return flash_attn_func(q, k, v)\n"
      "    return flash_attn_func(q, k, v, 0.0)\n";
  const std::string partly = Fixed(kept, true);
  EXPECT_TRUE(Has(partly, "try:\n    from flash_attn import flash_attn_func\nexcept ImportError:"))
      << partly;
  EXPECT_TRUE(Has(partly, "    flash_attn_func = None\n"));
  EXPECT_TRUE(Has(partly, "        return flash_attn_func(q, k, v)\n"));
}

TEST(FixTest, AnAttentionLibraryUsedForMoreThanAttentionKeepsItsImport) {
  const std::string src =
      "import torch\n"
      "import xformers.ops as xops\n"
      "\n"
      "mask = xops.fmha.BlockDiagonalMask.from_seqlens([3, 4])\n"
      "out = xops.memory_efficient_attention(q, k, v, window_size=(1, 1))\n";
  const FileFix fix = FixOf(src, true);
  EXPECT_TRUE(Has(fix.text, "\nimport xformers.ops as xops\n"));  // Not wrapped.
  EXPECT_TRUE(
      Has(fix.text, "memory_efficient_attention(q, k, v, window_size=(1, 1))"));  // No equivalent.
  for (const auto& o : fix.outcomes) EXPECT_FALSE(o.fixed) << o.code << " " << o.note;
}

TEST(FixTest, BitsandbytesThroughHuggingFaceBecomesFloat16) {
  const std::string src =
      "import torch\n"
      "from transformers import AutoModelForCausalLM, TrainingArguments\n"
      "\n"
      "a = AutoModelForCausalLM.from_pretrained(\"m\", load_in_8bit=True, device_map=\"auto\")\n"
      "b = AutoModelForCausalLM.from_pretrained(\"m\", load_in_4bit=True, "
      "torch_dtype=torch.bfloat16)\n"
      "t = TrainingArguments(output_dir=\"o\", optim='paged_adamw_32bit')\n"
      "c = AutoModelForCausalLM.from_pretrained(\"m\", attn_implementation=\"flash_attention_2\")\n"
      "d = AutoModelForCausalLM.from_pretrained(\n"
      "    \"m\", load_in_4bit=True, quantization_config=BitsAndBytesConfig(load_in_4bit=True))\n";
  EXPECT_EQ(Fixed(src), src);
  const std::string out = Fixed(src, true);
  EXPECT_TRUE(Has(out,
                  "a = AutoModelForCausalLM.from_pretrained(\"m\", torch_dtype=torch.float16, "
                  "device_map=\"auto\")\n"));
  EXPECT_TRUE(Has(out, "(\"m\", load_in_4bit=False, torch_dtype=torch.bfloat16)\n"));
  EXPECT_TRUE(Has(out, "optim='adamw_torch')\n"));
  EXPECT_TRUE(Has(out, "attn_implementation=\"sdpa\")\n"));
  // The quantisation config decides: left whole, for a person to drop.
  EXPECT_TRUE(Has(out,
                  "    \"m\", load_in_4bit=True, "
                  "quantization_config=BitsAndBytesConfig(load_in_4bit=True))\n"));
  ExpectIdempotent(src, true);
}

TEST(FixTest, AByteOrderMarkStaysFirst) {
  const std::string src =
      "\xEF\xBB\xBF# Copyright\n"
      "import torch\n"
      "\n"
      "x = torch.zeros(1).cuda()\n";
  const std::string out = Fixed(src);
  ASSERT_TRUE(out.starts_with("\xEF\xBB\xBF# Copyright\nimport torch\n")) << out;
  EXPECT_EQ(Count(out, "\xEF\xBB\xBF"), 1u);
  EXPECT_TRUE(Has(out, "x = torch.zeros(1).to(_dualtrack_device())\n"));
  EXPECT_LT(out.find("import torch"), out.find("def _dualtrack_device("));
  ExpectIdempotent(src);
}

TEST(FixTest, ChecksAndPartsOfExpressionsStayAsTheyAre) {
  const std::string src =
      "import torch\n"
      "\n"
      "if torch.cuda.is_available():\n"
      "    x = torch.zeros(1).cuda()\n"
      "name = f\"cuda:{3}\"\n"
      "d = torch.device(\"cuda\", 0, 1)\n";
  const FileFix fix = FixOf(src);
  EXPECT_TRUE(Has(fix.text, "    x = torch.zeros(1).cuda()\n"));  // Guarded: another path exists.
  EXPECT_TRUE(Has(fix.text, "d = torch.device(\"cuda\", 0, 1)\n"));  // Not a device torch knows.
  for (const auto& o : fix.outcomes) EXPECT_FALSE(o.fixed) << o.code << " " << o.note;
  EXPECT_EQ(fix.text, src);
}

TEST(FixTest, MixedPrecisionThroughEverySpelling) {
  const std::string src =
      "import torch\n"
      "from torch.cuda.amp import autocast\n"
      "\n"
      "scaler = torch.cuda.amp.GradScaler(init_scale=1024)\n"
      "with torch.cuda.amp.autocast(enabled=True):\n"
      "    pass\n"
      "with autocast():\n"
      "    pass\n";
  // torch.cuda.amp disables itself without CUDA: a portable line, left by a plain fix; with
  // --all the rewrite turns fp16 mixed precision on for MPS, so it also needs --unsafe-fixes.
  EXPECT_EQ(Fixed(src), src);
  const FileFix all = FixOf(src, false, true);
  EXPECT_EQ(all.text, src);
  ASSERT_EQ(all.outcomes.size(), 4u);  // The import, and three uses.
  for (const Outcome& o : all.outcomes) {
    if (o.line == 2) continue;
    EXPECT_TRUE(o.unsafe && Has(o.note, "fp16 mixed precision on for MPS")) << o.note;
  }
  const std::string out = Fixed(src, true, true);
  EXPECT_FALSE(Has(out, "from torch.cuda.amp import"));  // Its one use is rewritten: F401 else.
  EXPECT_TRUE(Has(out, "scaler = _dualtrack_grad_scaler(init_scale=1024)\n"));
  EXPECT_TRUE(Has(out, "with _dualtrack_autocast(enabled=True):\n"));
  EXPECT_TRUE(Has(out, "with _dualtrack_autocast():\n"));
  EXPECT_TRUE(Has(out, "def _dualtrack_autocast("));
  EXPECT_TRUE(Has(out, "def _dualtrack_grad_scaler("));
  EXPECT_TRUE(Has(out, "def _dualtrack_device("));  // The amp helpers ask it for the device.
  ExpectIdempotent(src, true, true);
}

TEST(FixTest, AnAmpImportWhoseUsesAreAllRewrittenGoes) {
  // Left, the import would be unused in the fixed file (ruff F401).
  for (const char* import : {"import torch.cuda.amp as amp\n", "from torch.cuda import amp\n"}) {
    const std::string src =
        std::string("import torch\n") + import + "\nscaler = amp.GradScaler(enabled=True)\n";
    const std::string out = Fixed(src, true, true);
    EXPECT_FALSE(Has(out, import)) << out;
    EXPECT_TRUE(Has(out, "scaler = _dualtrack_grad_scaler(enabled=True)\n"));
  }
  // A function's own import is judged on its own block: the other function's use is not its.
  const std::string local =
      "import torch\n"
      "\n"
      "\n"
      "def a():\n"
      "    from torch.cuda.amp import autocast\n"
      "    with autocast():\n"
      "        pass\n"
      "\n"
      "\n"
      "def b(autocast):\n"
      "    return autocast\n";
  const std::string out = Fixed(local, true, true);
  EXPECT_FALSE(Has(out, "from torch.cuda.amp import autocast")) << out;
  EXPECT_TRUE(Has(out, "def b(autocast):\n    return autocast\n"));
  // An unfinished import at the end of a file is left, and read within the file's tokens.
  const std::string cut = "import torch\nx = torch.ones(1).cuda()\nfrom torch.cuda";
  EXPECT_TRUE(Has(Fixed(cut, true, true), "\nfrom torch.cuda"));
  // Another name of the statement, or a use the fix leaves, keeps it.
  for (const char* src : {"import torch\nfrom torch.cuda import amp, Stream\n\n"
                          "scaler = amp.GradScaler()\ns = Stream()\n",
                          "import torch\nfrom torch.cuda.amp import autocast\n\n"
                          "with autocast():\n    pass\nctx = autocast\n"}) {
    const std::string out = Fixed(src, true, true);
    EXPECT_TRUE(Has(out, std::string(src).substr(13, 30))) << out;
  }
}

TEST(FixTest, ALibraryThatPlacesItsOwnModelGetsTheSameDevice) {
  // clip.load picks "cuda" if available, else the CPU: with the inputs moved to the Mac's GPU the
  // model must go there too, or the first forward mixes devices.
  const std::string src =
      "import clip\n"
      "import torch\n"
      "\n"
      "model, preprocess = clip.load(\"ViT-B/32\")\n"
      "other, _ = clip.load(\"RN50\", device=\"cpu\")\n"
      "third, _ = clip.load(\"RN50\", \"cpu\")\n"
      "image = preprocess(img).unsqueeze(0).cuda()\n";
  const std::string out = Fixed(src);
  EXPECT_TRUE(Has(out, "model, preprocess = clip.load(\"ViT-B/32\", device=_dualtrack_device())\n"))
      << out;
  EXPECT_TRUE(Has(out, "other, _ = clip.load(\"RN50\", device=\"cpu\")\n"));  // Chosen: kept.
  EXPECT_TRUE(Has(out, "third, _ = clip.load(\"RN50\", \"cpu\")\n"));
  ExpectIdempotent(src);
  // A module that moves nothing to the device keeps the library's own choice.
  const std::string alone = "import clip\n\nmodel, preprocess = clip.load(\"ViT-B/32\")\n";
  EXPECT_EQ(Fixed(alone), alone);
}

TEST(FixTest, CudaCallsBecomeRunTimeChoices) {
  const std::string src =
      "import torch\n"
      "\n"
      "torch.cuda.manual_seed_all(0)\n"
      "torch.cuda.synchronize()\n"
      "torch.cuda.empty_cache()\n"
      "peak = torch.cuda.max_memory_allocated() / 2**30\n"
      "with torch.cuda.device(0):\n"
      "    pass\n";
  // manual_seed_all and empty_cache do nothing without CUDA: only --all rewrites them.
  const std::string plain = Fixed(src);
  EXPECT_TRUE(Has(plain, "\ntorch.cuda.manual_seed_all(0)\n"));
  EXPECT_TRUE(Has(plain, "\ntorch.cuda.empty_cache()\n"));
  EXPECT_TRUE(Has(plain, "_dualtrack_cuda(\"synchronize\", \"synchronize\")()\n"));
  const std::string out = Fixed(src, false, true);
  EXPECT_TRUE(Has(out, "_dualtrack_cuda(\"manual_seed_all\", \"manual_seed\")(0)\n"));
  EXPECT_TRUE(Has(out, "_dualtrack_cuda(\"synchronize\", \"synchronize\")()\n"));
  EXPECT_TRUE(Has(out, "_dualtrack_cuda(\"empty_cache\", \"empty_cache\")()\n"));
  EXPECT_TRUE(Has(out, "peak = _dualtrack_cuda(\"max_memory_allocated\", None, 0)() / 2**30\n"));
  EXPECT_TRUE(Has(out, "with _dualtrack_cuda(\"device\")(0):\n"));
  EXPECT_FALSE(Has(out, "def _dualtrack_device("));  // Not needed here.
  ExpectIdempotent(src);
  ExpectIdempotent(src, false, true);
}

TEST(FixTest, NcclChoicesAndHuggingFaceFp16) {
  const std::string src =
      "import argparse\n"
      "import torch\n"
      "import torch.distributed as dist\n"
      "from transformers import TrainingArguments\n"
      "\n"
      "parser = argparse.ArgumentParser()\n"
      "parser.add_argument(\"--device\", default=\"cpu\", choices=['cuda', 'cpu'])\n"
      "dist.init_process_group(backend='nccl')\n"
      "args = TrainingArguments(output_dir=\"out\", fp16=True)\n"
      "loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True)\n";
  const std::string out = Fixed(src, false, true);
  // pin_memory=True only warns without CUDA: portable, rewritten with --all alone.
  EXPECT_TRUE(Has(Fixed(src), "batch_size=4, pin_memory=True)"));
  EXPECT_TRUE(Has(out, "choices=['cuda', 'cpu', 'mps'])"));
  EXPECT_TRUE(Has(out, "backend=('nccl' if torch.cuda.is_available() else 'gloo')"));
  EXPECT_TRUE(Has(out, "fp16=torch.cuda.is_available())"));
  EXPECT_TRUE(Has(out, "batch_size=4, pin_memory=torch.cuda.is_available())"));
  EXPECT_FALSE(Has(out, "def _dualtrack_"));  // These name torch only.
  ExpectIdempotent(src);
}

TEST(FixTest, BackendSettingsOnlyWithCuda) {
  const std::string src =
      "import torch\n"
      "\n"
      "torch.backends.cudnn.benchmark = True  # faster convolutions\n"
      "if torch.backends.cudnn.deterministic:\n"
      "    pass\n";
  EXPECT_EQ(Fixed(src), src);  // A flag that does nothing without CUDA: left unless --all.
  const std::string out = Fixed(src, false, true);
  // A block, never `if ...: stmt` on one line (E701 in ruff and flake8).
  EXPECT_TRUE(Has(out,
                  "\nif torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True  # "
                  "faster convolutions\n"));
  EXPECT_TRUE(Has(out, "\nif torch.backends.cudnn.deterministic:\n"));  // A read stays a read.
  ExpectIdempotent(src, false, true);
  // Indented settings keep their indentation; one sharing its line with another statement is
  // left, since the block would take the other statement in with it.
  const std::string nested =
      "import torch\n"
      "\n"
      "def setup(args):\n"
      "    torch.backends.cuda.matmul.allow_tf32 = True\n"
      "    torch.backends.cudnn.benchmark = True; x = 1\n"
      "    return x\n";
  const FileFix fix = FixOf(nested, false, true);
  EXPECT_TRUE(Has(fix.text,
                  "\n    if torch.cuda.is_available():\n        "
                  "torch.backends.cuda.matmul.allow_tf32 = True\n"))
      << fix.text;
  EXPECT_TRUE(Has(fix.text, "\n    torch.backends.cudnn.benchmark = True; x = 1\n"));
  EXPECT_EQ(fix.fixed(), 1u);
  ExpectIdempotent(nested, false, true);
}

TEST(FixTest, Float64OnlyWithUnsafeFixes) {
  const std::string src =
      "import torch\n"
      "\n"
      "x = torch.zeros(2, dtype=torch.float64, device=device)\n"
      "y = x.double()\n"
      "a, b = x.double(), torch.ones(1, dtype=torch.double)\n"
      "c = x.mean().double()\n";
  const FileFix safe = FixOf(src);
  EXPECT_EQ(safe.text, src);
  ASSERT_FALSE(safe.outcomes.empty());
  EXPECT_TRUE(safe.outcomes[0].unsafe);
  EXPECT_TRUE(Has(safe.outcomes[0].note, "--unsafe-fixes"));
  const std::string out = Fixed(src, /*unsafe=*/true);
  EXPECT_TRUE(Has(out, "x = torch.zeros(2, dtype=torch.float32, device=device)\n"));
  EXPECT_TRUE(Has(out, "y = x.float()\n"));
  EXPECT_TRUE(
      Has(out, "a, b = x.float(), torch.ones(1, dtype=torch.float32)\n"));  // One finding, both.
  EXPECT_TRUE(Has(out, "c = x.mean().float()\n"));
  ExpectIdempotent(src, true);
}

TEST(FixTest, ImportsTorchWhenTheModuleDoesNot) {
  const std::string src =
      "\"\"\"A module that only imports torch.nn.\"\"\"\n"
      "from __future__ import annotations\n"
      "\n"
      "import torch.nn as nn\n"
      "\n"
      "\n"
      "def place(m: nn.Module) -> nn.Module:\n"
      "    return m.cuda()\n";
  const std::string out = Fixed(src);
  EXPECT_TRUE(Has(out, "import torch.nn as nn\nimport torch\n\n\ndef _dualtrack_device("));
  EXPECT_TRUE(Has(out, "    return m.to(_dualtrack_device())\n"));
  EXPECT_EQ(out.rfind("\"\"\"A module", 0), 0u);  // The docstring stays first.
  ExpectIdempotent(src);
}

TEST(FixTest, AFileWithoutImportsOrFinalNewline) {
  const std::string src = "x.cuda()";
  const std::string out = Fixed(src);
  EXPECT_EQ(out.rfind("import torch\n", 0), 0u) << out;
  EXPECT_TRUE(Has(out, "x.to(_dualtrack_device())"));
  ExpectIdempotent(src);
}

TEST(FixTest, NotebooksCellByCellWithTheirMagicsAndLayout) {
  const std::string nb =
      "{\n \"cells\": [\n"
      "  {\"cell_type\": \"code\", \"metadata\": {}, \"outputs\": [], \"source\": [\"import "
      "torch\\n\"]},\n"
      "  {\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"x.cuda()\"},\n"
      "  {\"cell_type\": \"code\", \"metadata\": {}, \"outputs\": [], \"source\": "
      "[\"%time y = x.cuda()\\n\", \"z = x.cuda()\"]},\n"
      "  {\"cell_type\": \"code\", \"metadata\": {}, \"outputs\": [], \"source\": \"w = "
      "x.cuda()\"}\n"
      " ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
  std::vector<scan::Finding> findings;
  ASSERT_TRUE(scan::ScanNotebook(nb, Reg(), "n.ipynb", findings).ok());
  ASSERT_EQ(findings.size(), 2u);  // The magic line is not scanned.
  auto fixed = FixNotebook(nb, findings, FixOptions{});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->fixed(), 2u);
  const std::string& out = fixed->text;
  EXPECT_TRUE(Has(out, "\"%time y = x.cuda()\\n\"")) << out;  // Magics stay as written.
  EXPECT_TRUE(Has(out, "\"z = x.to(_dualtrack_device())\"")) << out;
  EXPECT_TRUE(Has(out, "\"source\": \"w = x.to(_dualtrack_device())\""))
      << out;                                           // A string stays one.
  EXPECT_EQ(Count(out, "def _dualtrack_device("), 1u);  // In the first cell that needs it.
  EXPECT_FALSE(Has(out, "import torch\\nimport torch"));
  EXPECT_TRUE(Has(out, "\"source\": \"x.cuda()\""));  // Markdown is prose.
  EXPECT_EQ(out.substr(0, 12), "{\n \"cells\": ");    // Indentation and key order kept.
  std::vector<scan::Finding> again;
  ASSERT_TRUE(scan::ScanNotebook(out, Reg(), "n.ipynb", again).ok());
  EXPECT_EQ(FixNotebook(out, again, FixOptions{})->text, out);
  EXPECT_FALSE(FixNotebook("{\"cells\": 3}", {}, FixOptions{}).ok());
}

TEST(FixTest, APositionThatHoldsNoTokenIsLeft) {
  std::vector<scan::Finding> stale(1);
  stale[0].code = "DT101";
  stale[0].line = 1;
  stale[0].column = 40;
  const FileFix fix = FixPython("x = 1\n", stale, FixOptions{});
  EXPECT_EQ(fix.text, "x = 1\n");
  ASSERT_EQ(fix.outcomes.size(), 1u);
  EXPECT_FALSE(fix.outcomes[0].fixed);
  EXPECT_TRUE(Has(fix.outcomes[0].note, "changed since the scan"));
}

TEST(FixTest, CheckpointLoadsGetAMapLocation) {
  // Where the result only feeds load_state_dict, its location does not matter: "cpu" is safe.
  const std::string src =
      "import torch\n"
      "ckpt = torch.load(path)\n"
      "model.load_state_dict(ckpt['model'])\n"
      "opt.load_state_dict(ckpt['optimizer'])\n"
      "model.load_state_dict(torch.load('w.pt'))\n"
      "torch.save(model.state_dict(), 'out.pt')\n";
  const FileFix fix = FixOf(src);
  EXPECT_TRUE(Has(fix.text, "ckpt = torch.load(path, map_location=\"cpu\")\n")) << fix.text;
  EXPECT_TRUE(Has(fix.text, "model.load_state_dict(torch.load('w.pt', map_location=\"cpu\"))"))
      << fix.text;
  EXPECT_FALSE(Has(fix.text, "_dualtrack_device")) << fix.text;  // No helper for "cpu".
  ExpectIdempotent(src);
  // Tensors used where they land: with CUDA they still go back to the device they were saved
  // from (map_location None), without it to the device in use.
  const std::string used =
      "import torch\n"
      "state = torch.load(path)\n"
      "loss = state['anchors'].sum()\n"
      "torch.save(state, 'out.pt')\n";
  const FileFix fixed = FixOf(used);
  ASSERT_FALSE(fixed.outcomes.empty());
  EXPECT_TRUE(fixed.outcomes[0].fixed);
  EXPECT_FALSE(fixed.outcomes[0].unsafe);
  EXPECT_TRUE(Has(fixed.text,
                  "torch.load(path, map_location=(None if torch.cuda.is_available() else "
                  "_dualtrack_device()))"))
      << fixed.text;
  ExpectIdempotent(used);
  // A map_location already given, positionally or by keyword, is kept.
  for (const char* given : {"torch.load(p, 'cpu')", "torch.load(p, map_location=dev)"}) {
    const std::string s = std::string("import torch\nck = ") + given +
                          "\nm.load_state_dict(ck)\ntorch.save(ck, 'o.pt')\n";
    EXPECT_EQ(Fixed(s), s) << given;
  }
}

// An extension the module uses only inside functions: its import becomes lazy, the uses stay (each
// needs the extension when it runs). Uses at import time, a function's own import and a star
// import are left as written.
TEST(FixTest, AnExtensionImportBecomesLazyOnlyWhenNothingUsesItAtImport) {
  const std::string lazy =
      "import torch\n"
      "import fused_cuda  # kernels\n"
      "\n"
      "class Op(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        return fused_cuda.run(x)\n";
  const std::string out = Fixed(lazy);
  EXPECT_TRUE(Has(out,
                  "try:\n    import fused_cuda  # kernels\nexcept ImportError:  # built only with "
                  "CUDA: each call still needs it\n    fused_cuda = None\n"))
      << out;
  EXPECT_TRUE(Has(out, "        return fused_cuda.run(x)\n")) << out;
  ExpectIdempotent(lazy);
  for (const char* at_import : {"RUN = fused_cuda.run\n", "class Op:\n    run = fused_cuda.run\n",
                                "@fused_cuda.jit\ndef f(x):\n    return x\n",
                                "def f(x, op=fused_cuda.run):\n    return op(x)\n"}) {
    const std::string src = std::string("import fused_cuda\n") + at_import;
    EXPECT_EQ(Fixed(src), src) << at_import;
  }
  for (const char* src : {"def f(x):\n    import fused_cuda\n    return fused_cuda.run(x)\n",
                          "from fused_cuda import *\n\ndef f(x):\n    return run(x)\n"})
    EXPECT_EQ(Fixed(src), src) << src;
}

// The rule pages say which rules have a fix and show it: the registry's record of that agrees
// with the fixer, and every example's "after" is what the fixer writes for its "before".
TEST(FixTest, TheRegistryAndTheFixerAgree) {
  for (const auto& r : Reg().rules()) {
    EXPECT_EQ(HasFix(r.code), !r.fix.empty()) << r.code;
    EXPECT_EQ(IsUnsafeFix(r.code), r.fix == "unsafe") << r.code;
    if (r.fix.empty()) continue;
    const std::string out = Fixed(r.fix_before, r.fix == "unsafe", true);
    EXPECT_TRUE(Has(out, r.fix_after)) << r.code << ":\n" << out;
    EXPECT_FALSE(Has(r.fix_before, r.fix_after)) << r.code;
  }
}

TEST(FixWriteTest, AFileChangedSinceItWasReadIsNotWritten) {
  auto dir = TempDir::Make("dualtrack-fix-test-");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "train.py";
  ASSERT_TRUE(WriteFileAtomic(path, "x.cuda()\n").ok());
  // Someone saved the file between our read and our write.
  const auto stale = WriteIfUnchanged(path, "x.cuda()  # old\n", "x.to(_dualtrack_device())\n");
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(Has(stale.error().ToString(), "train.py"));
  EXPECT_TRUE(Has(stale.error().ToString(), "changed since it was read"));
  EXPECT_EQ(*ReadFile(path), "x.cuda()\n");
  ASSERT_TRUE(WriteIfUnchanged(path, "x.cuda()\n", "x.to(_dualtrack_device())\n").ok());
  EXPECT_EQ(*ReadFile(path), "x.to(_dualtrack_device())\n");
}

TEST(FixVerifyTest, ACommandThatPinsTheDeviceIsNamed) {
  using V = std::vector<std::string>;
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--device", "cpu"}), "--device cpu");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--device=cuda:0"}), "--device=cuda:0");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "device=cpu", "--steps", "2"}), "device=cpu");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--no-cuda"}), "--no-cuda");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--gpu", "-1"}), "--gpu -1");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "trainer.accelerator=mps"}),
            "trainer.accelerator=mps");
  // Not a device: other options, a device option left at its default, a file named cpu.
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--steps", "2"}), "");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--device"}), "");
  EXPECT_EQ(PinnedDevice(V{"python", "cpu", "--out", "cpu"}), "");
  EXPECT_EQ(PinnedDevice(V{"python", "train.py", "--device", "auto"}), "");
}

TEST(FixVerifyTest, TheMirrorWritesFixedFilesAndLinksTheRest) {
  auto src = TempDir::Make("dualtrack-fix-src-");
  auto dst = TempDir::Make("dualtrack-fix-dst-");
  ASSERT_TRUE(src.ok() && dst.ok());
  namespace fs = std::filesystem;
  fs::create_directories(src->path() / "pkg");
  fs::create_directories(src->path() / "data");
  fs::create_directories(src->path() / ".git");
  ASSERT_TRUE(WriteFileAtomic(src->path() / "train.py", "old\n").ok());
  ASSERT_TRUE(WriteFileAtomic(src->path() / "pkg" / "model.py", "old\n").ok());
  ASSERT_TRUE(WriteFileAtomic(src->path() / "pkg" / "util.py", "util\n").ok());
  ASSERT_TRUE(WriteFileAtomic(src->path() / "data" / "x.npy", "data").ok());
  const auto out = dst->path() / "fixed";
  ASSERT_TRUE(MirrorProject(src->path(), out, {{"pkg/model.py", "new\n"}}).ok());
  EXPECT_EQ(*ReadFile(out / "pkg" / "model.py"), "new\n");
  EXPECT_FALSE(fs::is_symlink(out / "pkg"));
  EXPECT_TRUE(fs::is_symlink(out / "pkg" / "util.py"));
  EXPECT_TRUE(fs::is_symlink(out / "train.py"));
  EXPECT_TRUE(fs::is_symlink(out / "data"));  // A folder without fixes is one link.
  EXPECT_FALSE(fs::exists(out / ".git"));
  EXPECT_EQ(*ReadFile(src->path() / "pkg" / "model.py"), "old\n");  // The original is untouched.
}

TEST(DiffTest, UnifiedHunksWithContext) {
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\neleven\n";
  EXPECT_EQ(UnifiedDiff(a, b, "n.txt"),
            "--- a/n.txt\n+++ b/n.txt\n"
            "@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+eleven\n");
  EXPECT_EQ(UnifiedDiff(a, a, "n.txt"), "");
  EXPECT_EQ(UnifiedDiff("x", "y", "t"),
            "--- a/t\n+++ b/t\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n"
            "\\ No newline at end of file\n");
}

TEST(DiffTest, FarApartChangesAreSeparateHunks) {
  std::string a, b;
  for (int i = 1; i <= 30; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 3 || i == 25 ? "x" : std::to_string(i)) + "\n";
  }
  const std::string d = UnifiedDiff(a, b, "f");
  EXPECT_EQ(Count(d, "@@ -"), 2u) << d;
  EXPECT_TRUE(Has(d, "@@ -1,6 +1,6 @@\n"));
  EXPECT_TRUE(Has(d, "@@ -22,7 +22,7 @@\n"));
}

TEST(FixNotebookTest, KeepsEveryByteItDoesNotFix) {
  // Numbers a JSON round trip would rewrite, an escape, CRLF line ends: none is in a fixed source.
  const std::string meta =
      "\"metadata\": {\"id\": 12345678901234567890, \"huge\": 123456789012345678901234567890, "
      "\"ratio\": 1.10, \"e\": \"caf\\u00e9\"}";
  const std::string nb =
      "{\r\n \"cells\": [\r\n  {\r\n   \"cell_type\": \"code\",\r\n   \"source\": [\r\n"
      "    \"import torch\\n\",\r\n    \"x = torch.zeros(2).cuda()\\n\",\r\n    \"y = 1\"\r\n"
      "   ]\r\n  }\r\n ],\r\n " +
      meta + "\r\n}\r\n";
  std::vector<scan::Finding> findings;
  ASSERT_TRUE(scan::ScanNotebook(nb, Reg(), "n.ipynb", findings).ok());
  auto fixed = FixNotebook(nb, findings, FixOptions{});
  ASSERT_TRUE(fixed.ok()) << fixed.error().ToString();
  const std::string& out = fixed->text;
  EXPECT_TRUE(Has(out, meta)) << out;
  EXPECT_TRUE(Has(out, "    \"import torch\\n\",\r\n")) << out;  // An unchanged line, as written.
  EXPECT_TRUE(Has(out, "\"x = torch.zeros(2).to(_dualtrack_device())\\n\",\r\n")) << out;
  EXPECT_EQ(Count(out, "\n"), Count(out, "\r\n")) << out;
  ASSERT_EQ(fixed->replaced.size(), 1u);
  EXPECT_EQ(out.substr(0, fixed->replaced[0].after_begin),
            nb.substr(0, fixed->replaced[0].before_begin));
  EXPECT_EQ(out.substr(fixed->replaced[0].after_end), nb.substr(fixed->replaced[0].before_end));
}

TEST(FixNotebookTest, RefusesDeepNesting) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string nb = "{\"cells\": [], \"metadata\": {\"x\": " + deep + "}}";
  auto fixed = FixNotebook(nb, {}, FixOptions{});
  ASSERT_FALSE(fixed.ok());
  EXPECT_TRUE(Has(fixed.error().message, "nested deeper than")) << fixed.error().message;
  std::vector<scan::Finding> findings;
  auto scanned = scan::ScanNotebook(nb, Reg(), "deep.ipynb", findings);
  ASSERT_FALSE(scanned.ok());
  EXPECT_TRUE(Has(scanned.error().ToString(), "deep.ipynb"));
}

TEST(FixPythonTest, KeepsEachLinesEnding) {
  const std::string src = "import torch\r\n\r\nx = torch.zeros(2).cuda()\r\ny = 1\n";
  const FileFix fix = FixPython(src, ScanOf(src), FixOptions{});
  ASSERT_TRUE(fix.changed());
  EXPECT_TRUE(Has(fix.text, "def _dualtrack_device(index=None):\r\n")) << fix.text;
  EXPECT_TRUE(fix.text.ends_with(".to(_dualtrack_device())\r\ny = 1\n")) << fix.text;
  EXPECT_EQ(Count(fix.text, "\n"), Count(fix.text, "\r\n") + 1) << fix.text;
  EXPECT_TRUE(Has(fix.text, "\r\n\r\n\r\ndef _dualtrack_device")) << fix.text;  // Two blank lines.
}

TEST(DiffTest, KnownReplacementsGiveTheSameDiffAsTheWholeText) {
  std::string a, b;
  std::vector<Replaced> replaced;
  for (int i = 1; i <= 40; ++i) {
    const std::string line = std::to_string(i) + "\n";
    const std::string now = i % 7 == 0 ? "changed " + line : line;
    if (now != line) replaced.push_back({a.size(), a.size() + 1, b.size(), b.size() + 8});
    a += line;
    b += now;
  }
  EXPECT_EQ(UnifiedDiff(a, b, "f", replaced), UnifiedDiff(a, b, "f"));
}

TEST(DiffTest, ManyScatteredChangesStayCheap) {
  // 20,000 changed lines: a whole-text Myers trace would hold D^2 = 1.6e9 integers.
  std::string a, b;
  std::vector<Replaced> replaced;
  for (int i = 0; i < 20000; ++i) {
    a += "keep\nx.cuda()\n";
    b += "keep\nx.to(d)\n";
    replaced.push_back({a.size() - 9, a.size() - 1, b.size() - 8, b.size() - 1});
  }
  const std::string d = UnifiedDiff(a, b, "f", replaced);
  EXPECT_EQ(Count(d, "\n-x.cuda()"), 20000u);
  EXPECT_EQ(Count(d, "\n+x.to(d)"), 20000u);
  // Without the replacements the search gives up past its bound, still a correct diff.
  const std::string whole = UnifiedDiff(a, b, "f");
  EXPECT_EQ(Count(whole, "\n-x.cuda()"), 20000u);
}

TEST(DiffTest, ControlCharactersInTheNameAreEscaped) {
  const std::string d = UnifiedDiff("a\n", "b\n", "evil\x1b[2J.py");
  EXPECT_FALSE(Has(d, "\x1b")) << d;
  EXPECT_TRUE(Has(d, "--- a/evil")) << d;
}

}  // namespace
}  // namespace dt::fix
