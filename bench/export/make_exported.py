"""Exported programs (.pt2, torch.export.save) of the corpus families' miniatures, with one call's inputs and eager
outputs beside each, for Kiln's .pt2 reader and its tests.

    python3 make_exported.py OUT_DIR [--full | --unseen] [--only NAME,NAME]

--unseen exports models of families and code paths Kiln was not built with (torchvision's densenet, squeezenet,
shufflenet, mnasnet, regnet, googlenet, swin, vgg, efficientnet_v2, maxvit; transformers' DistilBERT, RoBERTa, ALBERT,
ELECTRA, T5's encoder, OPT, Llama, Qwen2 with their default attention, small random configurations), one of them with
a dynamic batch dimension: the acceptance check on programs that are not the project's own.

Writes OUT_DIR/NAME.pt2 (torch.export.save), OUT_DIR/NAME.io.pt (a TorchScript container whose buffers input0..,
output0.. hold the inputs and eager outputs, loadable by any LibTorch) and OUT_DIR/manifest.json. One program
(mlp_dynamic) has a dynamic batch dimension (torch.export.Dim) and a second input/output pair at another batch size.
Random weights; nothing is downloaded.
"""
import json
import os
import sys
import traceback

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "corpus"))
import make_corpus as mc  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


def cases(full):
    mini = not full
    img, batch, seq = (224, 8, 128) if full else (32, 2, 8)
    out = []
    for name in ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "vit_b_16"]:
        def build(name=name):
            m = mc.vision(name, mini).eval()
            mc.randomize_norm_stats(m)
            return m, (torch.randn(batch, 3, img, img),), None
        out.append((name, build, None))
    for family in ["bert", "gpt2"]:
        def build(family=family):
            m, cfg = mc.hf_model(family, mini)
            return mc.Called(m.eval(), "input_ids").eval(), (torch.randint(0, cfg.vocab_size, (batch, seq)),), cfg.vocab_size
        out.append((family + "_ids", build, None))
    out.append(("mlp_dynamic", lambda: (MLP().eval(), (torch.randn(4, 16),), None), "batch"))
    return out


UNSEEN_VISION = ["densenet121", "squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet1_0", "regnet_y_400mf", "googlenet",
                 "swin_t", "vgg11_bn", "efficientnet_v2_s", "maxvit_t", "wide_resnet50_2"]
UNSEEN_TEXT = ["distilbert", "roberta", "albert", "electra", "t5_encoder", "opt", "llama", "qwen2"]


def unseen_text_model(family):
    """A transformers model of `family` with a small random configuration and its default attention."""
    import transformers as tf

    small = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=512, vocab_size=1000,
                 max_position_embeddings=256)
    if family == "distilbert":
        return tf.DistilBertModel(tf.DistilBertConfig(dim=256, n_layers=4, n_heads=4, hidden_dim=512, vocab_size=1000))
    if family == "roberta":
        return tf.RobertaModel(tf.RobertaConfig(**small))
    if family == "albert":
        return tf.AlbertModel(tf.AlbertConfig(embedding_size=128, **small))
    if family == "electra":
        return tf.ElectraModel(tf.ElectraConfig(embedding_size=128, **small))
    if family == "t5_encoder":
        return tf.T5EncoderModel(tf.T5Config(d_model=256, d_kv=64, d_ff=512, num_layers=4, num_heads=4, vocab_size=1000))
    if family == "opt":
        return tf.OPTModel(tf.OPTConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, ffn_dim=512,
                                        vocab_size=1000, max_position_embeddings=256, word_embed_proj_dim=256))
    if family == "llama":
        return tf.LlamaModel(tf.LlamaConfig(num_key_value_heads=2, use_cache=False, **small))
    if family == "qwen2":
        return tf.Qwen2Model(tf.Qwen2Config(num_key_value_heads=2, use_cache=False, **small))
    raise KeyError(family)


class LastHidden(nn.Module):
    """A transformers model called with input_ids, returning its last hidden state (no cache)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        kw = {"use_cache": False} if "use_cache" in self.m.forward.__code__.co_varnames else {}
        return self.m(input_ids=ids, return_dict=False, **kw)[0]


def unseen_cases():
    import torchvision.models as tvm

    out = []
    for name in UNSEEN_VISION:
        def build(name=name):
            kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
            m = getattr(tvm, name)(weights=None, **kw).eval()
            mc.randomize_norm_stats(m)
            return m, (torch.randn(4, 3, 224, 224),), None
        out.append((name, build, "batch" if name == "regnet_y_400mf" else None))
    for family in UNSEEN_TEXT:
        def build(family=family):
            m = LastHidden(unseen_text_model(family).eval()).eval()
            mc.randomize_norm_stats(m)
            # ids above 2: RoBERTa numbers positions from the ids (padding id 1)
            return m, (torch.randint(2, 1000, (4, 64)),), 1000
        out.append((family, build, None))
    return out


def main():
    out_dir = sys.argv[1]
    full = "--full" in sys.argv
    unseen = "--unseen" in sys.argv
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"torch": torch.__version__, "models": []}
    only = set(sys.argv[sys.argv.index("--only") + 1].split(",")) if "--only" in sys.argv else None
    for name, build, dynamic in (unseen_cases() if unseen else cases(full)):
        if only and name not in only:
            continue
        entry = {"name": name, "file": name + ".pt2"}
        try:
            torch.manual_seed(0)
            m, inputs, vocab = build()
            shapes = None
            if dynamic:
                shapes = ({0: torch.export.Dim("batch", min=1, max=1024)},)
            with torch.no_grad():
                ep = torch.export.export(m, inputs, dynamic_shapes=shapes)
                torch.export.save(ep, os.path.join(out_dir, name + ".pt2"))
                ref = m(*inputs)
                pairs = [(inputs, ref)]
                if dynamic:
                    other = tuple(torch.randn(7 if name == "mlp_dynamic" else 2, *t.shape[1:]) for t in inputs)
                    pairs.append((other, m(*other)))
            io = []
            for i, (ins, outs) in enumerate(pairs):
                io += [t.contiguous() for t in ins]
            outs_flat = [t.detach().contiguous() for _, o in pairs for t in mc.flat_tensors(o)]
            torch.jit.script(mc.IO(io, outs_flat)).save(os.path.join(out_dir, name + ".io.pt"))
            entry["inputs"] = [[list(t.shape), str(t.dtype).replace("torch.", "")] for ins, _ in pairs for t in ins]
            entry["calls"] = len(pairs)  # inputs holds each call's arguments in turn
            if vocab:
                entry["vocab"] = vocab  # integer inputs are token ids in [0, vocab)
            entry["ops"] = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})
            entry["nodes"] = len(ep.graph.nodes)
        except Exception as e:  # noqa: BLE001
            entry["error"] = f"{type(e).__name__}: {e}"[:500]
            entry["traceback"] = traceback.format_exc()[-1500:]
        manifest["models"].append(entry)
        print(name, "error: " + entry["error"] if "error" in entry else f"ok, {entry['nodes']} nodes", flush=True)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
