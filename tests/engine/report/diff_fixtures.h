// Imported runs for the diff tests: a TORCH_TRACE log of a two-layer MLP (Dynamo's graph with its
// parameters, Inductor's output code naming the source nodes of each Triton kernel, guards, and in
// the "after" variant a graph break) joined with the profiler trace of the same process
// (tests/data/traces/kineto_small_mlp.json, pid 1034).
#pragma once

#include <string>

#include "engine/importers/import_files.h"
#include "tests/engine/importers/torch_trace/trace_text.h"
#include "tests/support/paths.h"

namespace kiln::test {

// with_call: the output code also holds its `call` function, whose two extern_kernels.mm calls (under
// their source-nodes comments) are the profiler's two aten::mm ops in each compiled call.
inline std::string write_mlp_trace(bool after, bool with_call = false) {
  TraceText log;
  log.pid = 1034;
  const std::string ctx = TraceText::ctx(0, 0);
  const std::string act = after ? "gelu" : "relu";
  log.record("\"str\": [\"mlp.py\", 0]");
  log.record("\"dynamo_start\": {\"stack\": [{\"line\": 12, \"name\": \"forward\", \"filename\": 0}]}", ctx);
  log.record("\"dynamo_output_graph\": {}", ctx,
             "class GraphModule(torch.nn.Module):\n"
             "    def forward(self, L_x_: \"f32[" + std::string(after ? "16" : "8") + ", 64][64, 1]cuda:0\", "
             "L_self_modules_fc1_parameters_weight_: \"f32[64, 64][64, 1]cuda:0\", "
             "L_self_modules_fc2_parameters_weight_: \"f32[64, 64][64, 1]cuda:0\"):\n"
             "        l_x_ = L_x_\n"
             "        l_self_modules_fc1_parameters_weight_ = L_self_modules_fc1_parameters_weight_\n"
             "        l_self_modules_fc2_parameters_weight_ = L_self_modules_fc2_parameters_weight_\n"
             "        \n"
             "        # File: /home/u/mlp.py:14 in forward, code: h = torch." + act + "(self.fc1(x))\n"
             "        linear: \"f32[8, 64][64, 1]cuda:0\" = torch._C._nn.linear(l_x_, l_self_modules_fc1_parameters_weight_);  l_x_ = None\n"
             "        " + act + ": \"f32[8, 64][64, 1]cuda:0\" = torch." + act + "(linear);  linear = None\n"
             "        \n"
             "        # File: /home/u/mlp.py:15 in forward, code: return torch.tanh(self.fc2(h)) * 2 + 1\n"
             "        linear_1: \"f32[8, 64][64, 1]cuda:0\" = torch._C._nn.linear(" + act + ", l_self_modules_fc2_parameters_weight_);  " + act + " = None\n"
             "        tanh: \"f32[8, 64][64, 1]cuda:0\" = torch.tanh(linear_1);  linear_1 = None\n"
             "        mul: \"f32[8, 64][64, 1]cuda:0\" = tanh * 2;  tanh = None\n"
             "        add: \"f32[8, 64][64, 1]cuda:0\" = mul + 1;  mul = None\n"
             "        return (add,)\n");
  log.record("\"dynamo_guards\": {}", ctx,
             std::string("[{\"code\": \"___check_type_id(L['x'], 8)\"}, {\"code\": \"L['x'].size()[0] == ") +
                 (after ? "16" : "8") + "\"}]");
  log.record("\"inductor_output_code\": {\"filename\": \"/tmp/ti/ab/cmlp.py\"}", ctx,
             "# Topologically Sorted Source Nodes: [linear, " + act + "]\n"
             "triton_poi_fused_addmm_relu_0 = async_compile.triton('triton_poi_fused_addmm_relu_0', '''\n"
             "@triton.jit\ndef triton_poi_fused_addmm_relu_0(in_out_ptr0, xnumel, XBLOCK: tl.constexpr):\n    pass\n"
             "''', device_str='cuda')\n"
             "# Topologically Sorted Source Nodes: [linear_1, tanh, mul, add]\n"
             "triton_poi_fused_add_addmm_mul_tanh_1 = async_compile.triton('triton_poi_fused_add_addmm_mul_tanh_1', '''\n"
             "@triton.jit\ndef triton_poi_fused_add_addmm_mul_tanh_1(in_out_ptr0, xnumel, XBLOCK: tl.constexpr):\n    pass\n"
             "''', device_str='cuda')\n" +
                 std::string(with_call ? "def call(args):\n"
                                         "    arg0_1, arg1_1, arg2_1 = args\n"
                                         "    buf0 = empty_strided_cuda((8, 64), (64, 1), torch.float32)\n"
                                         "    # Topologically Sorted Source Nodes: [linear]\n"
                                         "    extern_kernels.mm(arg0_1, reinterpret_tensor(arg1_1, (64, 64), (1, 64), 0), out=buf0)\n"
                                         "    triton_poi_fused_addmm_relu_0.run(buf0, 512, stream=stream0)\n"
                                         "    buf1 = empty_strided_cuda((8, 64), (64, 1), torch.float32)\n"
                                         "    # Topologically Sorted Source Nodes: [linear_1]\n"
                                         "    extern_kernels.mm(buf0, reinterpret_tensor(arg2_1, (64, 64), (1, 64), 0), out=buf1)\n"
                                         "    triton_poi_fused_add_addmm_mul_tanh_1.run(buf1, 512, stream=stream0)\n"
                                         "    return (buf1, )\n"
                                       : ""));
  if (after)
    log.record("\"artifact\": {\"name\": \"dynamo_graph_break_reason\", \"encoding\": \"string\"}", ctx,
               "Graph break in user code at /home/u/mlp.py:16\nGraph Break Reason: Unsupported: print() <script>\n");
  log.record("\"compilation_metrics\": {\"compile_id\": \"0/0\", \"co_name\": \"forward\", \"co_filename\": \"mlp.py\", "
             "\"co_firstlineno\": 12, \"start_time\": 1795334250.5, \"entire_frame_compile_time_s\": 1.5}",
             ctx);
  std::string path = temp_dir() + (after ? "/mlp_after" : "/mlp_before") + (with_call ? "_call.log" : ".log");
  log.write(path);
  return path;
}

// The joined session of write_mlp_trace(after) and the profiler trace; its model path made
// machine-independent for golden output.
inline session::Session mlp_session(bool after, bool with_call = false) {
  importers::ImportRequest req;
  req.paths = {write_mlp_trace(after, with_call), data("traces/kineto_small_mlp.json")};
  auto result = importers::import_files(req);
  session::Session s = std::move(result.sessions.at(0).session);
  s.model.path = after ? "mlp_after.log" : "mlp_before.log";
  return s;
}

}  // namespace kiln::test
