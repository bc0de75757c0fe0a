"""The model corpus: public model families (torchvision, transformers) with random weights, saved as TorchScript,
each with Dynamo's graph and break counts and a reference input/output pair.

    python3 make_corpus.py OUT_DIR [--mini] [--extra] [--only NAME,NAME]

--mini writes the miniature configurations (same model code, tiny sizes) that the test suite keeps as fixtures.
--extra writes other members of the same families instead (resnet50, resnext50_32x4d, mobilenet_v2,
mobilenet_v3_large, efficientnet_b1, convnext_small, vit_b_32; RoBERTa and DistilBERT): models Kiln was not
built with, to check that what works on the named models works on their relatives.
Writes OUT_DIR/NAME.pt (the model), OUT_DIR/NAME.io.pt (a TorchScript container whose buffers input0.., output0..
hold one call's inputs and eager outputs) and OUT_DIR/manifest.json (one entry per model, failures included).
Nothing is downloaded: every model is built from its configuration with random weights.
"""
import json
import os
import sys
import time
import traceback

import torch
from torch import nn

torch.manual_seed(0)


class Called(nn.Module):
    """A transformers model called with one keyword (inputs_embeds or input_ids), returning its last hidden state."""

    def __init__(self, m, keyword):
        super().__init__()
        self.m = m
        self.keyword = keyword

    def forward(self, x):
        return self.m(**{self.keyword: x})[0]


def tiny_resnet18_layout():
    """torchvision's ResNet and BasicBlock code with narrow layers (one block per stage)."""
    from torchvision.models.resnet import BasicBlock, ResNet

    m = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)
    m.inplanes = 8
    m.conv1 = nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3, bias=False)
    m.bn1 = nn.BatchNorm2d(8)
    m.layer1 = m._make_layer(BasicBlock, 8, 1)
    m.layer2 = m._make_layer(BasicBlock, 16, 1, stride=2)
    m.layer3 = m._make_layer(BasicBlock, 24, 1, stride=2)
    m.layer4 = m._make_layer(BasicBlock, 32, 1, stride=2)
    m.fc = nn.Linear(32, 10)
    return m


def vision(name, mini):
    import torchvision.models as tvm

    if not mini:
        return getattr(tvm, name)(weights=None)
    if name == "resnet18":
        return tiny_resnet18_layout()
    if name == "mobilenet_v3_small":
        return tvm.mobilenet_v3_small(weights=None, width_mult=0.25, num_classes=10)
    if name == "efficientnet_b0":
        from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

        setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
        return EfficientNet(setting, 0.2, last_channel=last, num_classes=10)
    if name == "convnext_tiny":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt

        return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.0, num_classes=10)
    if name == "vit_b_16":
        from torchvision.models.vision_transformer import VisionTransformer

        return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                                 num_classes=10)
    raise KeyError(name)


def hf_config(family, mini):
    import transformers as tf

    if family in ("roberta", "distilbert"):
        cfg = tf.RobertaConfig(torchscript=True, num_hidden_layers=4) if family == "roberta" else \
            tf.DistilBertConfig(torchscript=True, n_layers=4)
        cfg._attn_implementation = "eager"
        return cfg
    if family == "bert":
        kw = dict(num_hidden_layers=4) if not mini else dict(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=100,
            max_position_embeddings=64, type_vocab_size=2)
        cfg = tf.BertConfig(torchscript=True, **kw)
    else:
        kw = dict(n_layer=4) if not mini else dict(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64)
        cfg = tf.GPT2Config(torchscript=True, **kw)
    cfg._attn_implementation = "eager"  # the attention as written, not a fused SDPA kernel
    return cfg


def hf_model(family, mini):
    import transformers as tf

    cfg = hf_config(family, mini)
    cls = {"bert": tf.BertModel, "gpt2": tf.GPT2Model, "roberta": tf.RobertaModel, "distilbert": tf.DistilBertModel}[family]
    try:
        m = cls(cfg, attn_implementation="eager")
    except TypeError:
        m = cls(cfg)
    return m, cfg


def randomize_norm_stats(m):
    """Random weights that exercise every op: batch-norm statistics away from (0, 1), and weight
    matrices that a family initializes to zeros (torchvision's ViT head) made random, so that the
    output depends on the input and a comparison with eager can fail."""
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            with torch.no_grad():
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
    for name, p in m.named_parameters():
        if p.dim() >= 2 and not p.detach().any():
            with torch.no_grad():
                p.normal_(0.0, 0.02)


EXTRA_VISION = ["resnet50", "resnext50_32x4d", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b1", "convnext_small",
                "vit_b_32"]


def extra_cases():
    """Relatives of the named models, fp32 only: same families, other configurations and code paths."""
    out = []
    for name in EXTRA_VISION:
        def build(name=name):
            m = vision(name, False).eval()
            randomize_norm_stats(m)
            return m, (torch.randn(8, 3, 224, 224),), ["8x3x224x224:float32"]
        out.append((name, "torchvision", "float32", "script", build))
    for family in ["roberta", "distilbert"]:
        def build_ids(family=family):
            m, cfg = hf_model(family, False)
            # RoBERTa numbers positions from the ids (padding id 1): draw ids above it, as text would give.
            return Called(m.eval(), "input_ids").eval(), (torch.randint(2, cfg.vocab_size, (8, 128)),), \
                [f"8x128:int64[2,{cfg.vocab_size})"]
        out.append((f"{family}_ids", "transformers", "float32", "trace", build_ids))
    return out


def cases(mini, extra=False):
    """(name, family, dtype, how, builder) where builder() returns (module, inputs, kiln input specs)."""
    if extra:
        return extra_cases()
    img = 32 if mini else 224
    batch = 2 if mini else 8
    seq = 8 if mini else 128
    out = []
    for name in ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "vit_b_16"]:
        for dtype in (["float32", "float16", "bfloat16"] if name == "resnet18" else ["float32"]):
            def build(name=name, dtype=dtype):
                m = vision(name, mini).eval()
                randomize_norm_stats(m)
                dt = getattr(torch, dtype)
                m = m.to(dt)
                x = torch.randn(batch, 3, img, img).to(dt)
                return m, (x,), [f"{batch}x3x{img}x{img}:{dtype}"]
            suffix = "" if dtype == "float32" else "_" + {"float16": "fp16", "bfloat16": "bf16"}[dtype]
            out.append((name + suffix, "torchvision", dtype, "script", build))
    # GPT-2 in bfloat16 too: a second 16-bit transformer whose attention (with its causal mask) is written out.
    for family in ["bert", "gpt2"]:
        for dtype in (["float32", "float16", "bfloat16"] if family == "bert" else ["float32", "bfloat16"]):
            suffix = "" if dtype == "float32" else "_" + {"float16": "fp16", "bfloat16": "bf16"}[dtype]

            def build_embeds(family=family, dtype=dtype):
                m, cfg = hf_model(family, mini)
                dt = getattr(torch, dtype)
                hidden = cfg.hidden_size if family == "bert" else cfg.n_embd
                w = Called(m.eval(), "inputs_embeds").eval().to(dt)
                return w, (torch.randn(batch, seq, hidden).to(dt),), [f"{batch}x{seq}x{hidden}:{dtype}"]

            def build_ids(family=family, dtype=dtype):
                m, cfg = hf_model(family, mini)
                w = Called(m.eval(), "input_ids").eval().to(getattr(torch, dtype))
                return w, (torch.randint(0, cfg.vocab_size, (batch, seq)),), [f"{batch}x{seq}:int64[0,{cfg.vocab_size})"]

            out.append((f"{family}_embeds{suffix}", "transformers", dtype, "trace", build_embeds))
            if dtype == "float32":
                out.append((f"{family}_ids", "transformers", dtype, "trace", build_ids))
    return out


class IO(nn.Module):
    def __init__(self, inputs, outputs):
        super().__init__()
        for i, t in enumerate(inputs):
            self.register_buffer(f"input{i}", t)
        for i, t in enumerate(outputs):
            self.register_buffer(f"output{i}", t)

    def forward(self):
        return None


def flat_tensors(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for x in v for t in flat_tensors(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in flat_tensors(x)]
    return []


def dynamo_counts(m, inputs):
    import torch._dynamo as dynamo

    dynamo.reset()
    ex = dynamo.explain(m)(*inputs)
    reasons = []
    for r in ex.break_reasons:
        where = ""
        if getattr(r, "user_stack", None):
            f = r.user_stack[-1]
            where = f"{os.path.basename(f.filename)}:{f.lineno}"
        reasons.append({"reason": str(r.reason).splitlines()[0][:300], "where": where})
    return {"graphs": ex.graph_count, "breaks": ex.graph_break_count, "ops": ex.op_count, "reasons": reasons}


def main():
    out_dir = sys.argv[1]
    mini = "--mini" in sys.argv
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    os.makedirs(out_dir, exist_ok=True)
    extra = "--extra" in sys.argv
    manifest = {"torch": torch.__version__, "mini": mini, "extra": extra, "models": []}
    try:
        import torchvision
        import transformers
        manifest["torchvision"] = torchvision.__version__
        manifest["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001
        manifest["import_error"] = str(e)
    for name, family, dtype, how, build in cases(mini, extra):
        if only and name not in only:
            continue
        entry = {"name": name, "family": family, "dtype": dtype, "saved_by": how, "file": name + ".pt"}
        t0 = time.time()
        try:
            torch.manual_seed(0)
            m, inputs, specs = build()
            entry["inputs"] = specs
            entry["params"] = sum(p.numel() for p in m.parameters())
            with torch.no_grad():
                ref = m(*inputs)
            sm = torch.jit.script(m) if how == "script" else torch.jit.trace(m, inputs, check_trace=False)
            sm.save(os.path.join(out_dir, name + ".pt"))
            with torch.no_grad():
                outs = [t.detach().contiguous() for t in flat_tensors(ref)]
            torch.jit.script(IO([t.contiguous() for t in inputs], outs)).save(os.path.join(out_dir, name + ".io.pt"))
            try:
                # Dynamo on float32 CPU copies: the counts do not depend on the dtype.
                with torch.no_grad():
                    entry["dynamo"] = dynamo_counts(m, inputs)
            except Exception as e:  # noqa: BLE001
                entry["dynamo_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            ops = {}
            for n in sm.inlined_graph.nodes() if hasattr(sm, "inlined_graph") else sm.graph.nodes():
                ops[n.kind()] = ops.get(n.kind(), 0) + 1
            entry["torchscript_ops"] = dict(sorted(ops.items()))
        except Exception as e:  # noqa: BLE001
            entry["error"] = f"{type(e).__name__}: {e}"[:500]
            entry["traceback"] = traceback.format_exc()[-1500:]
        entry["seconds"] = round(time.time() - t0, 2)
        manifest["models"].append(entry)
        print(name, "error" if "error" in entry else "ok", entry.get("dynamo", entry.get("dynamo_error", entry.get("error"))),
              flush=True)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
