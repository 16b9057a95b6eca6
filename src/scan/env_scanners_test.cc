#include "scan/env_scanners.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "scan/test_registry.h"
#include "util/fs.h"

namespace dt::scan {
namespace {

using testing::Codes;
using testing::Reg;
using Strings = std::vector<std::string>;

template <class Fn>
std::vector<Finding> ScanText(Fn scan, const std::string& rel, const std::string& src,
                              const std::string& abs = "",
                              std::vector<CudaModule>* modules = nullptr) {
  std::vector<Finding> out;
  FindingSink sink(Reg(), rel, src, out);
  if (!abs.empty()) sink.set_path(abs);
  scan(src, sink);
  if (modules) *modules = sink.cuda_modules();
  return out;
}

TEST(ScanEnvFilesTest, CrOnlyLineEndsInEveryLineScanner) {
  EXPECT_EQ(Codes(ScanText(ScanRequirements, "requirements.txt", "numpy\rflash-attn\r\rcupy\r")),
            (Strings{"DT403@2", "DT403@4"}));
  EXPECT_EQ(Codes(ScanText(ScanShell, "run.sh", "echo hi\r\nnvidia-smi\r\n")),
            (Strings{"DT405@2"}));
  EXPECT_EQ(Codes(ScanText(ScanDockerfile, "Dockerfile", "FROM python:3.10\rRUN nvcc -V\r")),
            (Strings{"DT405@2"}));
}

TEST(ScanEnvFilesTest, CudaWheelIndexesAnywhere) {
  // A non-NVIDIA base image does not make a CUDA wheel portable.
  EXPECT_EQ(
      Codes(ScanText(
          ScanDockerfile, "Dockerfile",
          "FROM python:3.10-slim\n"
          "RUN pip install --pre torch --index-url https://download.example/whl/nightly/cu118\n"
          "RUN pip install torch --extra-index-url=https://download.pytorch.org/whl/cu121\n"
          "RUN pip install torch==1.12.1+cu113 -f "
          "https://download.pytorch.org/whl/torch_stable.html\n"
          "RUN pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
          "RUN cp /usr/cu118/a /b\n")),
      (Strings{"DT401@2", "DT401@3", "DT401@4"}));
  EXPECT_EQ(
      Codes(ScanText(ScanRequirements, "requirements.txt",
                     "--extra-index-url https://mirror.example.org/pytorch/whl/cu124/\ntorch\n")),
      (Strings{"DT401@1"}));
}

TEST(ScanEnvFilesTest, ComposeReservesGpusAndRuns8Bit) {
  std::string compose =
      "services:\n"
      "  app:\n"
      "    build: .\n"
      "    command: python generate.py --load_8bit\n"
      "    deploy:\n"
      "      resources:\n"
      "        reservations:\n"
      "          devices:\n"
      "            - driver: nvidia\n"
      "              count: all\n"
      "              capabilities: [gpu]\n";
  auto fs = ScanText(ScanCompose, "docker-compose.yml", compose);
  EXPECT_EQ(Codes(fs), (Strings{"DT221@4", "DT420@9", "DT420@11"}));
  EXPECT_EQ(fs[0].cls, FindingClass::kLibrary);
  EXPECT_EQ(fs[1].cls, FindingClass::kEnvironment);
  // Written differently: runtime, a block capabilities list, the list form of command, env vars.
  std::string other =
      "version: '3.8'\n"
      "services:\n"
      "  worker:\n"
      "    image: nvcr.io/nvidia/pytorch:24.01-py3\n"
      "    runtime: nvidia\n"
      "    environment:\n"
      "      - NVIDIA_VISIBLE_DEVICES=all\n"
      "      - CUDA_VISIBLE_DEVICES=0\n"
      "    command: [\"python\", \"serve.py\", \"--quantize\", \"bitsandbytes-nf4\"]\n"
      "    deploy:\n"
      "      resources:\n"
      "        reservations:\n"
      "          devices:\n"
      "            - capabilities:\n"
      "                - gpu\n"
      "  # driver: nvidia\n"
      "  web:\n"
      "    image: nginx\n"
      "    command: python web.py --load-in-8bit false\n";
  EXPECT_EQ(Codes(ScanText(ScanCompose, "compose.yaml", other)),
            (Strings{"DT404@4", "DT420@5", "DT420@7", "DT406@8", "DT221@9", "DT420@15"}));
}

TEST(ScanEnvFilesTest, CommandLinesSelectCudaDevices) {
  auto fs = ScanText(ScanShell, "train.sh",
                     "python train.py --device cuda:0 --epochs 3\n"
                     "python train.py --device=cuda\n"
                     "python train.py --accelerator gpu --devices 1\n"
                     "python train.py --device cpu\n"
                     "python train.py --device $DEV  # --device cuda\n"
                     "echo \"run with --device cuda\"\n"
                     "python eval.py --device-map auto --device mps\n");
  EXPECT_EQ(Codes(fs), (Strings{"DT120@1", "DT120@2", "DT120@3"}));
  EXPECT_EQ(fs[0].message, "--device cuda:0 selects CUDA devices");
  EXPECT_EQ(Codes(ScanText(ScanCompose, "compose.yml",
                           "services:\n  a:\n    command: python serve.py --device cuda\n")),
            (Strings{"DT120@3"}));
}

// A script's options are the settings of the program it runs: judged as a config's key: value
// pairs are, with the script's own variables read (`--gpus=${n_gpus_per_node}`, `--tf32 True`,
// `gpu_list="${CUDA_VISIBLE_DEVICES:-0}"`), and the packages it installs as requirements.
TEST(ScanEnvFilesTest, CommandLineOptionsAreSettings) {
  auto fs = ScanText(ScanShell, "train.sh",
                     "n_gpus_per_node=4\n"
                     "export NONE=0\n"
                     "python -u train.py \\\n"
                     "    --gpus=${n_gpus_per_node} --accelerator=\"ddp\" \\\n"
                     "    --tf32 True --dist-backend nccl\n"
                     "python eval.py --gpus $NONE --tf32 False\n"
                     "python eval.py --num_gpus ${UNSET}\n"
                     "gpu_list=\"${CUDA_VISIBLE_DEVICES:-0}\"\n"
                     "echo \"export CUDA_VISIBLE_DEVICES to choose\"\n"
                     "pip install flash-attn numpy --no-build-isolation\n"
                     "conda install -y -c nvidia cuda-compiler\n"
                     "python x.py --attn_implementation \"flash_attention_2\"\n");
  EXPECT_EQ(Codes(fs), (Strings{"DT120@4", "DT106@5", "DT205@5", "DT120@7", "DT406@8", "DT403@10",
                                "DT408@11", "DT220@12"}));
  EXPECT_EQ(fs[0].message, "--gpus ${n_gpus_per_node} selects CUDA devices");
  // A variable set to 0 selects no GPU, and so does an unset one whose default is 0.
  EXPECT_EQ(Codes(ScanText(ScanShell, "a.sh", "python t.py --gpus ${G:-0}\n")), Strings{});
}

// A command string that a detached shell, a scheduler or ssh runs is a command line too; quoted
// prose stays prose. LSF (`bsub -gpu`) and PBS (`ngpus=`) jobs ask for GPUs as SLURM's do.
TEST(ScanEnvFilesTest, CommandStringsAndClusterJobsAreRead) {
  auto fs =
      ScanText(ScanShell, "jobs.sh",
               "screen -dm bash -c \". ~/env.sh && CUDA_VISIBLE_DEVICES=3 nnUNetv2_train 3\"\n"
               "bsub -q gpu -gpu num=1:j_exclusive=yes \"python train.py\"\n"
               "ssh node1 'python train.py --device cuda:1'\n"
               "sbatch --wrap=\"nvidia-smi\"\n"
               "echo \"CUDA_VISIBLE_DEVICES=0 python train.py --device cuda\"\n"
               "bash -c \"echo 'CUDA_VISIBLE_DEVICES=1 is the default'\"\n"
               "#BSUB -gpu \"num=2\"\n"
               "#PBS -l select=1:ncpus=8:ngpus=4\n"
               "qsub -l nodes=1:ppn=4:gpus=2 job.pbs\n"
               "bsub -q cpu -n 4 python preprocess.py\n"
               "#PBS -l select=1:ncpus=8\n");
  EXPECT_EQ(Codes(fs),
            (Strings{"DT406@1", "DT409@2", "DT120@3", "DT405@4", "DT409@7", "DT409@8", "DT409@9"}));
  EXPECT_EQ(fs[1].message, "-gpu num=1:j_exclusive=yes asks the cluster scheduler for NVIDIA GPUs");
  EXPECT_EQ(fs[5].message, "ngpus=4 asks the cluster scheduler for NVIDIA GPUs");
  // Malformed lines: an unterminated command string stays blanked, an escaped quote does not end
  // one, a bare `-gpu` or `ngpus=` with nothing after it is still read without reading past it.
  EXPECT_EQ(Codes(ScanText(ScanShell, "bad.sh",
                           "bash -c \"CUDA_VISIBLE_DEVICES=1 python x.py\n"
                           "bash -c \"echo \\\" CUDA_VISIBLE_DEVICES=2 x\"\n"
                           "bsub -gpu\n#PBS -l ngpus=\nbash -c\n")),
            (Strings{"DT406@2", "DT409@4"}));
}

// A config's options off by default: false and null values, also a key left empty (Hydra's
// `distributed_port:` with the next key at its indent); a key whose block follows is no value.
TEST(ScanEnvFilesTest, YamlOptionsOffByDefault) {
  std::vector<std::string> off, on;
  YamlFlags(
      "fp16: false\ndistributed_port:\nlocal_rank: -1\nmodel:\n  name: bert\n"
      "  pretrained:\nlayers:\n- 1\namp: true\ncomment: # none\nlast:\n",
      off, on);
  EXPECT_EQ(
      off, (std::vector<std::string>{"comment", "distributed_port", "fp16", "last", "pretrained"}));
  EXPECT_EQ(on, (std::vector<std::string>{"amp"}));
}

TEST(ScanEnvFilesTest, CogBuildAsksForAGpu) {
  EXPECT_EQ(Codes(ScanText(ScanCompose, "cog.yaml",
                           "build:\n  gpu: true\n  python_version: \"3.10\"\n"
                           "predict: \"predict.py:Predictor\"\n")),
            (Strings{"DT420@2"}));
  EXPECT_EQ(Codes(ScanText(ScanCompose, "cog.yaml", "build:\n  gpu: false\n")), Strings{});
}

TEST(ScanEnvFilesTest, ComposeExecFormSelectsCudaDevices) {
  // The exec (list) form quotes each argument; the block-list form may split an option from its
  // value over two entries, reported at the option.
  std::string compose =
      "services:\n"
      "  a:\n"
      "    command: [\"python\", \"train.py\", \"--device\", \"cuda\"]\n"  // 3
      "  b:\n"
      "    entrypoint: ['python', 'eval.py', '--device=cuda:1']\n"  // 5
      "  c:\n"
      "    command:\n"
      "      - python\n"
      "      - --device\n"  // 9
      "      - \"cuda\"\n"
      "      - \"--accelerator=gpu\"\n"  // 11
      "  d:\n"
      "    command: [\"python\", \"x.py\", \"--device\", \"cpu\"]\n"
      "    args:\n"
      "      - --device\n"
      "      - mps\n"
      "    environment:\n"
      "      - --device\n"
      "    labels:\n"
      "      - cuda\n";
  auto fs = ScanText(ScanCompose, "compose.yml", compose);
  ASSERT_EQ(Codes(fs), (Strings{"DT120@3", "DT120@5", "DT120@9", "DT120@11"}));
  EXPECT_EQ(fs[0].message, "--device cuda selects CUDA devices");
  EXPECT_EQ(fs[2].column, 9u);
}

TEST(ScanEnvFilesTest, ShellExistenceTestsGuardTheTool) {
  // `command -v` / `which` only look the tool up; what runs behind such a test (the `then` of an
  // if, the `else` of its negation, the rest of an `&&` list) runs only where it is installed.
  std::string sh =
      "if command -v nvidia-smi >/dev/null 2>&1; then\n"  // 1: a lookup, not a run
      "  nvidia-smi\n"                                    // 2: guarded
      "  if [ -n \"$X\" ]; then nvcc -V; fi\n"            // 3: still inside the guard
      "else\n"
      "  nvcc --version\n"  // 5: unguarded
      "fi\n"
      "nvidia-smi -L\n"                             // 7: unguarded
      "which nvcc >/dev/null && nvcc --version\n"   // 8: guarded
      "command -v nvcc || nvcc --version\n"         // 9: unguarded
      "if ! [ -x \"$(command -v nvcc)\" ]; then\n"  // 10
      "  echo no\n"
      "else\n"
      "  nvcc -V\n"  // 13: guarded
      "fi\n"
      "if nvidia-smi -L >/dev/null; then torchrun --nproc_per_node 8 t.py; fi\n"  // 15
      "[ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc -V\n";         // 16
  auto fs = ScanText(ScanShell, "run.sh", sh);
  ASSERT_EQ(Codes(fs), (Strings{"DT405@2", "DT405@3", "DT405@5", "DT405@7", "DT405@8", "DT405@9",
                                "DT405@13", "DT405@15", "DT407@15", "DT405@16"}));
  std::vector<bool> guarded;
  for (const auto& f : fs) guarded.push_back(f.guarded);
  // The probe on line 15 is a test; the launch behind it runs where nvidia-smi worked.
  EXPECT_EQ(guarded,
            (std::vector<bool>{true, true, false, false, true, false, true, true, true, true}));
  EXPECT_EQ(fs.back().column, 56u);  // The run, not the `-x` test.
  auto df = ScanText(ScanDockerfile, "Dockerfile",
                     "FROM python:3.10\n"
                     "RUN if command -v nvcc; then \\\n"
                     "      nvcc -V; \\\n"
                     "    fi\n"
                     "RUN nvcc -V\n");
  ASSERT_EQ(Codes(df), (Strings{"DT405@3", "DT405@5"}));
  EXPECT_TRUE(df[0].guarded);
  EXPECT_FALSE(df[1].guarded);
  // A Makefile recipe's `@if`; a heredoc's Python `if` is no shell condition for what follows.
  auto mk = ScanText(ScanShell, "Makefile",
                     "info:\n\t@if command -v nvidia-smi >/dev/null; then nvidia-smi; fi\n"
                     "check:\n\tpython - <<EOF\nif x:\n    pass\nEOF\n\tnvidia-smi\n\n\n\n\n\n\n"
                     "\n\nx\ny\nz\nw\nv\nu\nt\nnvidia-smi -L\n");
  ASSERT_EQ(Codes(mk), (Strings{"DT405@2", "DT405@8", "DT405@24"}));
  EXPECT_TRUE(mk[0].guarded);
  EXPECT_FALSE(mk[1].guarded);
  EXPECT_FALSE(mk[2].guarded);
  // `then` on the line after the condition.
  auto two = ScanText(ScanShell, "a.sh", "if command -v nvcc >/dev/null\nthen\n  nvcc -V\nfi\n");
  ASSERT_EQ(Codes(two), (Strings{"DT405@3"}));
  EXPECT_TRUE(two[0].guarded);
}

TEST(ScanEnvFilesTest, ShellScriptsRunThe8BitPath) {
  EXPECT_EQ(Codes(ScanText(ScanShell, "finetune.sh",
                           "python qlora.py \\\n  --bits 4 \\\n  --load_in_4bit \\\n  --model x\n"
                           "echo \"use --load-in-8bit for less memory\"\n")),
            (Strings{"DT221@3"}));
}

TEST(ScanEnvFilesTest, YamlConfigSelectsCudaOnlyPaths) {
  std::string cfg =
      "model:\n"
      "  target: ldm.models.Autoencoder\n"
      "  params:\n"
      "    ddconfig:\n"
      "      attn_type: vanilla-xformers\n"
      "      ch: 128\n";
  auto fs = ScanText(ScanConfigYaml, "configs/model.yaml", cfg);
  EXPECT_EQ(Codes(fs), (Strings{"DT220@5"}));
  EXPECT_EQ(fs[0].cls, FindingClass::kLibrary);
  EXPECT_EQ(Codes(ScanText(ScanConfigYaml, "config/config.yaml",
                           "defaults:\n  - task: cls\ngpus:\n  - 0\nepochs: 200\n")),
            (Strings{"DT120@3"}));
  std::string other =
      "trainer:\n"
      "  gpus: 1\n"           // 2
      "  accelerator: gpu\n"  // 3
      "  precision: 16\n"     // 4: mixed precision is not a finding
      "  amp: true\n"         // 5
      "  use_fp16: true\n"    // 6
      "optimizer:\n"
      "  _target_: apex.optimizers.FusedAdam\n"  // 8
      "model:\n"
      "  use_flash_attn: True\n"  // 10
      "  use_xformers: false\n"   // 11
      "  device: cuda:0\n"        // 12
      "dist:\n"
      "  backend: nccl\n"                                           // 14
      "description: Trains on CUDA with xformers and flash_attn\n"  // 15: prose
      "notes: |\n"
      "  gpus: [0, 1]\n"  // 17: inside a block scalar
      "# gpus: [0]\n"     // 18: comment
      "eval_gpus: [0]\n"  // 19: not a device key we know
      "cpu_gpus: 0\n"
      "gpus_alt:\n"
      "gpu_ids: -1\n"  // 22: the CPU
      "other_gpus: []\n"
      "cuda_note: see the README for cuda setup\n"  // 24
      "list: [xformers, sdpa]\n";                   // 25
  EXPECT_EQ(
      Codes(ScanText(ScanConfigYaml, "configs/train.yaml", other)),
      (Strings{"DT120@2", "DT120@3", "DT220@8", "DT220@10", "DT120@12", "DT205@14", "DT220@25"}));
  EXPECT_EQ(Codes(ScanText(
                ScanConfigYaml, "k8s/values.yaml",
                "resources:\n  limits:\n    nvidia.com/gpu: 1\nenv:\n  CUDA_VISIBLE_DEVICES: 0\n"
                "num_gpus: 8\nn_gpu: 0\nngpu: auto\n")),
            (Strings{"DT420@3", "DT406@5", "DT120@6"}));
  EXPECT_EQ(Codes(ScanText(ScanConfigYaml, "c.yaml",
                           "gpus: 0\ngpus: []\ngpus: null\naccelerator: mps\n"
                           "device: cpu\nattn: vanilla\n")),
            Strings{});
}

TEST(ScanEnvFilesTest, YamlConfigReadsThePythonLibraryVocabulary) {
  // The keys and values the Python keyword and string rules read as a flash-attn use, and a
  // library's config_words (axolotl's `flash_attention: true`).
  std::string cfg =
      "attn_implementation: flash_attention_2\n"  // 1
      "use_flash_attention_2: yes\n"              // 2
      "attn_impl: flash_attention_3\n"            // 3
      "flash_attention: true\n"                   // 4
      "attention: flash_attention\n"              // 5
      "attn_implementation: sdpa\n"               // 6
      "use_flash_attention_2: false\n"            // 7
      "flash_attention: false\n"                  // 8
      "help: use flash_attention_2 on A100\n";    // 9: prose
  EXPECT_EQ(Codes(ScanText(ScanConfigYaml, "config.yaml", cfg)),
            (Strings{"DT220@1", "DT220@2", "DT220@3", "DT220@4", "DT220@5"}));
}

TEST(ScanEnvFilesTest, MalformedYamlDoesNotCrash) {
  for (const std::string& s :
       {std::string("key: [unclosed\n  - : :\n- - -\n:\n'': ''\ngpus: [\ngpus: ]\ngpus: "
                    "99999999999999999999\n"),
        std::string("\t\t- gpus:\n\x01\xff: \xfe\n"), std::string(1 << 20, 'x') + ":\n",
        std::string("gpus:"), std::string("gpus:\n  -"), std::string("a: |"),
        std::string(100000, '-'),
        std::string("-e \nfile:\nfile://\n./\n-\n\"\n'\n[\n]\n= \nFROM\nFROM --platform\nRUN \\\n"),
        std::string("\r\r\r\n\n\r"), std::string(200000, '\r')}) {
    ScanText(ScanConfigYaml, "c.yaml", s);
    ScanText(ScanCompose, "compose.yaml", s);
    ScanText(ScanCondaEnv, "environment.yml", s);
    ScanText(ScanGitmodules, ".gitmodules", s);
    ScanText(ScanPyproject, "pyproject.toml", s);
    ScanText(ScanSetupCfg, "setup.cfg", s);
    ScanText(ScanRequirements, "requirements.txt", s);
    ScanText(ScanDockerfile, "Dockerfile", s);
    ScanText(ScanShell, "run.sh", s);
  }
  SUCCEED();
}

TEST(ScanEnvFilesTest, ProjectMetadataIsProse) {
  std::string toml =
      "[project]\n"
      "name = \"myproj\"\n"
      "keywords = [\"cuda\", \"pytorch\", \"flash-attn\"]\n"
      "description = \"Fast CUDA kernels, ported to triton\"\n"
      "classifiers = [\n  \"Environment :: GPU :: NVIDIA CUDA\",\n  \"cuda\",\n]\n"
      "dependencies = [\n  \"torch\",\n  \"xformers>=0.0.20\",\n]\n"  // 11
      "[project.optional-dependencies]\n"
      "cuda = [\"flash-attn\"]\n"  // 14
      "[project.urls]\n"
      "cuda = \"https://example.org/cuda\"\n"
      "[build-system]\n"
      "requires = [\"setuptools\", \"nvidia-cuda-runtime-cu12\"]\n"  // 18
      "[[tool.uv.index]]\n"
      "url = \"https://download.pytorch.org/whl/cu121\"\n"  // 20
      "[tool.scikit-build]\n"
      "cmake.args = [\"-DCMAKE_CUDA_ARCHITECTURES=80\"]\n"  // 22
      "[tool.other]\n"
      "doc = \"explains TORCH_CUDA_ARCH_LIST\"\n"               // 24: prose
      "env = \"TORCH_CUDA_ARCH_LIST='8.0 9.0' MAX_JOBS=4\"\n";  // 25
  EXPECT_EQ(Codes(ScanText(ScanPyproject, "pyproject.toml", toml)),
            (Strings{"DT403@11", "DT403@14", "DT402@18", "DT401@20", "DT302@22", "DT302@25"}));
  std::string cfg =
      "[metadata]\n"
      "name = cuda-thing\n"
      "keywords = cuda, triton\n"
      "description = xformers kernels\n"
      "[options]\n"
      "install_requires =\n"
      "    torch\n"
      "    bitsandbytes>=0.41\n"  // 8
      "[options.extras_require]\n"
      "fast = flash-attn\n";  // 10
  EXPECT_EQ(Codes(ScanText(ScanSetupCfg, "setup.cfg", cfg)), (Strings{"DT403@8", "DT403@10"}));
}

class ScanEnvTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dualtrack_env_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((dir_ / rel).parent_path());
    ASSERT_TRUE(WriteFileAtomic(dir_ / rel, text).ok());
  }
  std::string Abs(const std::string& rel) { return (dir_ / rel).string(); }
  std::filesystem::path dir_;
};

TEST_F(ScanEnvTreeTest, SubmodulesAreExtensions) {
  std::string gm =
      "[submodule \"submodules/diff-raster\"]\n\tpath = submodules/diff-raster\n"
      "\turl = https://github.com/example/diff-raster.git\n"
      "[submodule \"knn\"]\n\tpath = third_party/fast-knn\n\turl = x\n"
      "[submodule \"docs-theme\"]\n\tpath = docs/theme\n\turl = y\n"
      "[submodule \"3rdparty/lm-eval\"]\n\tpath = 3rdparty/lm-eval\n\turl = z\n"
      "[submodule \"tacotron2\"]\n\tpath = tacotron2\n\turl = t\n";
  std::filesystem::create_directories(dir_ / "submodules/diff-raster");  // Not checked out.
  // Not checked out, imported as source from sys.path and never installed: plain Python the
  // checkout lacks, no build.
  std::filesystem::create_directories(dir_ / "tacotron2");
  Write("mel.py",
        "import sys\nsys.path.insert(0, 'tacotron2')\nfrom tacotron2.layers import STFT\n");
  // diff-raster is installed, which builds its extension.
  Write("environment.yml", "dependencies:\n  - pip:\n    - submodules/diff-raster\n");
  Write("third_party/fast-knn/setup.py",
        "from torch.utils.cpp_extension import CUDAExtension\nsetup(name='fast_knn_pkg',\n"
        "  ext_modules=[CUDAExtension(name='fast_knn._C', sources=['k.cu'])])\n");
  Write("docs/theme/style.css", "body {}\n");  // Checked out, no CUDA: not reported.
  Write("render.py", "import torch\nfrom diff_raster import Rasterizer\n");
  // Not checked out and imported by nothing: an evaluation harness, not a dependency.
  Write("eval/run.py", "import lm_eval_harness_other\n");
  Write(".gitmodules", gm);
  std::vector<CudaModule> mods;
  auto fs = ScanText(ScanGitmodules, ".gitmodules", gm, Abs(".gitmodules"), &mods);
  ASSERT_EQ(Codes(fs), (Strings{"DT321@1", "DT321@4"}));
  EXPECT_EQ(fs[0].cls, FindingClass::kExtension);
  EXPECT_NE(fs[0].message.find("submodules/diff-raster"), std::string::npos);
  EXPECT_NE(fs[0].message.find("empty"), std::string::npos);
  EXPECT_NE(fs[0].message.find("imported by render.py (as diff_raster)"), std::string::npos)
      << fs[0].message;
  EXPECT_NE(fs[1].message.find("CUDAExtension"), std::string::npos);
  Strings names;
  for (const auto& m : mods) names.push_back(m.module + "@" + std::to_string(m.line));
  EXPECT_EQ(names, (Strings{"diff_raster@1", "fast_knn@4", "fast_knn_pkg@4", "fast_knn._C@4"}));

  // environment.yml pip entries that build those submodules.
  std::string env =
      "dependencies:\n  - pip:\n    - submodules/diff-raster\n    - ./third_party/fast-knn\n"
      "    - docs/theme\n    - ./missing\n    - requests\n";
  EXPECT_EQ(Codes(ScanText(ScanCondaEnv, "environment.yml", env, Abs("environment.yml"))),
            (Strings{"DT322@3", "DT322@4"}));
}

TEST_F(ScanEnvTreeTest, LocalPackagesWithCudaSources) {
  Write("pointops/_ext-src/ball_query_gpu.cu", "__global__ void k() {}\n");
  Write("pointops/__init__.py", "");
  Write("tools/plain/setup.py", "setup(name='plain')\n");
  Write("env/requirements.txt", "");
  std::string req = "torch>=2.0\n./pointops\nhydra-core\n-e ./tools/plain\n-e .\n../outside\n";
  std::vector<CudaModule> mods;
  auto fs = ScanText(ScanRequirements, "requirements.txt", req, Abs("requirements.txt"), &mods);
  EXPECT_EQ(Codes(fs), (Strings{"DT322@2"}));
  ASSERT_EQ(mods.size(), 1u);
  EXPECT_EQ(mods[0].module, "pointops");
  EXPECT_FALSE(InspectFolder(dir_.string(), "../" + dir_.filename().string()).exists);
  EXPECT_FALSE(InspectFolder(dir_.string(), "/etc").exists);
  EXPECT_TRUE(InspectFolder(dir_.string(), "pointops").cuda_sources);
  // pip in a Dockerfile or a script: the folder is relative to the build context.
  EXPECT_EQ(Codes(ScanText(ScanDockerfile, "Dockerfile",
                           "FROM python:3.10\nRUN pip install -r requirements.txt ./pointops && "
                           "pip install -e tools/plain\n"
                           "RUN pip install --no-build-isolation -e pointops; echo done\n",
                           Abs("Dockerfile"))),
            (Strings{"DT322@2", "DT322@3"}));
  // Relative to the requirements file's own folder, an editable install, and file: URLs.
  std::string nested = "-e ../pointops\nfile:../pointops\n";
  EXPECT_EQ(
      Codes(ScanText(ScanRequirements, "requirements-dev.txt",
                     "-e pointops\n-e git+https://x/y.git#egg=z\n", Abs("requirements-dev.txt"))),
      (Strings{"DT322@1"}));
  EXPECT_EQ(Codes(ScanText(ScanRequirements, "env/requirements.txt", nested,
                           Abs("env/requirements.txt"))),
            (Strings{"DT322@1", "DT322@2"}));
}

TEST(ScanEnvTest, Requirements) {
  std::string src =
      "# flash-attn in a comment\n--index-url https://download.pytorch.org/whl/cu118\n"
      "torch==2.1.0+cu118\nnvidia-cublas-cu12\nxformers>=0.0.23 ; sys_platform == 'linux'\nnumpy\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "requirements.txt", src, out);
  ScanRequirements(src, sink);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT401@2", "DT401@3", "DT402@4", "DT403@5"}));
}

TEST(ScanEnvTest, ShellIgnoresQuotedProse) {
  std::string src = "echo \"install nvcc first\"\nnvidia-smi -L\n# nvcc in a comment\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "run.sh", src, out);
  ScanShell(src, sink);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT405@2"}));
}

TEST(ScanEnvTest, CondaAndDocker) {
  std::string env =
      "channels:\n  - conda-forge\n  - nvidia\ndependencies:\n  - numpy\n  - cudatoolkit=11.8\n"
      "  - pip:\n    - bitsandbytes==0.43\n";
  std::vector<Finding> out;
  FindingSink sink(Reg(), "environment.yml", env, out);
  ScanCondaEnv(env, sink);
  EXPECT_EQ(Codes(out), (std::vector<std::string>{"DT408@3", "DT402@6", "DT403@8"}));
  std::string docker =
      "# FROM nvidia/cuda:12.1\nFROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:24.01-py3\nRUN "
      "nvidia-smi\n";
  std::vector<Finding> out2;
  FindingSink sink2(Reg(), "Dockerfile", docker, out2);
  ScanDockerfile(docker, sink2);
  EXPECT_EQ(Codes(out2), (std::vector<std::string>{"DT404@2", "DT405@3"}));
}

}  // namespace
}  // namespace dt::scan
