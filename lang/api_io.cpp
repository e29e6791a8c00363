// The registry's entries for observing, files, plans and layouts (the registry: lang/api.hpp; the table's
// shorthand: lang/api_table.hpp).
#include "lang/api_table.hpp"

namespace tapestry::api_table {

namespace {

const ApiEntry kEntries[] = {
    // --- observe --------------------------------------------------------------------
    {"Tensor:dim", K::Method, "tensor", "x:dim()", "Number of dimensions.", lua::l_dim},
    {"Tensor:size", K::Method, "tensor", "x:size([d])",
     "Size of dim d, or the whole shape as a table. Also x.shape, #x (size of dim 1).", lua::l_size},
    {"Tensor:numel", K::Method, "tensor", "x:numel()", "Number of elements.", lua::l_numel},
    {"Tensor:item", K::Method, "observe", "x:item()",
     "Observe a one-element tensor as a Lua number (integer for int dtypes) or boolean.", lua::l_item},
    {"Tensor:totable", K::Method, "observe", "x:totable()",
     "Observe as nested Lua tables (a scalar gives a number).", lua::l_totable},
    {"Tensor:release", K::Method, "tensor", "x:release()",
     "Drop this handle's reference now (also done by __gc and __close); later use is an error.",
     lua::l_release},
    {"tp.eval", K::Function, "observe", "tp.eval(a, b, ...)",
     "Compute the given tensors (and pending tp.env bindings) now; returns them, backed by data. "
     "A computed value is kept while a Tensor refers to it or a pending expression will read it, "
     "so `u = tp.eval(step(u))` in a loop holds one state, not every step's.",
     lua::l_eval},
    {"tp.stats", K::Function, "observe", "tp.stats()",
     "Counters: observations, nodes_evaluated, kernels, fused_ops, bytes_allocated, bytes_live (tensor data "
     "alive now, on this process; a refused allocation is never counted), live_nodes, "
     "plans, plan_cache_hits, blocks_run, messages, bytes_moved (between ranks: bytes_transfers, the "
     "slices plans moved, plus bytes_combines, what merging partials moved, which together equal the "
     "plans' plan:cost().bytes_moved, plus bytes_gathered, results gathered to rank 0), collectives "
     "(the plans' moves by kind: {[\"all-reduce\"] = {count =, bytes =}, ...} for point-to-point, "
     "broadcast, all-gather, all-to-all, reduce, all-reduce and reduce-scatter), device_blocks, "
     "bytes_to_device, bytes_from_device (sharded blocks run on a GPU and the host-device copies they "
     "needed; "
     "rank 0's own under MPI), bytes_read, bytes_written (tensor data read from and written to files "
     "by this process: every virtual rank's, rank 0's own under MPI), and "
     "time_schedule, time_run, time_plan, time_move (seconds; time_move is the part of time_run "
     "spent sending, receiving and combining between ranks), block_retries (blocks run again after a "
     "transient failure), and for a driver's MPI job job_relaunches (jobs lost and replaced), "
     "restored_from_survivors, restored_from_replicas (stored tensors restored from the surviving ranks' "
     "own pieces, or with a buddy's replica of a lost rank's), restored_from_lineage, "
     "restored_from_checkpoint (no copy survived: recomputed from the expression it was computed "
     "from, or read from the last tp.checkpoint) and tensors_lost (none of these brought it back), "
     "spills, bytes_spilled, spill_readbacks (values and stored pieces written to --spill-dir because "
     "an allocation would pass --memory-per-rank, their bytes, and how many were read back: this "
     "process's and every virtual rank's; under MPI every rank's, each of which spills its own pieces, as "
     "their answers to the last request said).",
     lua::l_stats},
    {"tp.set_printoptions", K::Function, "observe",
     "tp.set_printoptions{threshold=, edgeitems=, precision=, linewidth=}",
     "How tensors print, as numpy's np.set_printoptions (defaults 1000, 3, 8, 75): a tensor of more than "
     "threshold elements shows only edgeitems at each end of every dim longer than 2*edgeitems, floats "
     "keep at most precision digits after the point, lines wrap at linewidth. On several ranks only the "
     "elements shown are gathered to rank 0 (tp.stats().bytes_moved counts them). Keys left out keep their "
     "value.",
     lua::l_set_printoptions},
    {"tp.get_printoptions", K::Function, "observe", "tp.get_printoptions()",
     "The print options as a table {threshold, edgeitems, precision, linewidth}.", lua::l_get_printoptions},
    {"tp.trace", K::Function, "observe", "tp.trace(path) / tp.trace(nil) / tp.trace(x)",
     "Start writing a Chrome/Perfetto trace (JSON trace events; open it in ui.perfetto.dev or "
     "chrome://tracing) of every block, transfer and combine on every rank (pid = rank), of "
     "single-rank kernels, and of the plan/run phases; a transfer or combine is named by the collective "
     "it is part of (\"broadcast: send to 3\", \"all-reduce sum (matmul)\"). tp.trace(nil) stops and "
     "finishes the file "
     "and returns its path; the file is also finished at exit. tp.trace(x) of a Tensor is the "
     "matrix trace (x:trace()).",
     lua::l_trace},
    {"tp.clock", K::Function, "observe", "tp.clock()", "Monotonic wall-clock seconds, as a float.",
     lua::l_clock},
    {"tp.tensors", K::Function, "env", "tp.tensors()",
     "The environment as rows {name, shape, dtype, bytes, layout, storage, computed, lost, replicated, "
     "packed}; storage: \"memory\", or \"disk\" for a tensor placed there with tp.place (its layout is "
     "then \"on disk\"); lost: its shards were on an MPI job that lost a rank and no copy survived "
     "(layout \"lost with the MPI job\"); replicated: each rank's pieces have a copy on another rank, "
     "so the loss of any one rank loses none of it (a driver's MPI job); packed: a declared tensor "
     "kept as its stored tiles (docs/properties.md): shape is the dense one, bytes and layout those "
     "of what is held.",
     lua::l_tensors},
    {"tp.place", K::Function, "env", "tp.place(x, {storage = \"disk\"})",
     "Put x's value on disk and return it as a tensor read from there when needed: computed (or "
     "read where it is stored), written under the spill directory (--spill-dir, default /tmp) as "
     "tp.save writes (on N ranks each rank its own rows), and read as tp.load reads (each rank only "
     "the boxes its blocks need, at each observation; nothing of it stays in memory between "
     "observations). tp.env.w = tp.place(tp.env.w, {storage = \"disk\"}) moves a named tensor to disk; "
     "tp.tensors() and :tensors say where each lives; a creator's storage = \"disk\" makes a tensor "
     "there (tp.zeros({n, n}, {name = \"w\", storage = \"disk\"})). The file is removed once nothing refers "
     "to "
     "the tensor. A write that fails (a full disk) is an error naming the tensor, and it stays "
     "where it was.",
     lua::l_place},
    {"tp.env", K::Module, "env", "tp.env.name = expr / tp.env.name / tp.env.name = nil",
     "Named tensors that outlive Lua variables. A binding is computed at the next observation; "
     "if that fails the previous value is kept. A computed value is stored as a leaf: its history "
     "is cut (tp.grad sees a parameter), and 1000 unobserved rebinds of a name in a row are "
     "computed at the binding. Names are identifiers (no NUL bytes); the metatable is protected. "
     "pairs(tp.env) iterates names in order.",
     nullptr},

    // --- io -------------------------------------------------------------------------
    {"tp.load", K::Function, "io", "tp.load(path [,opts])",
     "Read a NumPy .npy file (f32 '<f4', f64 '<f8', i32 '<i4', i64 '<i8', bool '|b1'; "
     "little-endian, C or Fortran order; a 0-d array gives a scalar). path may be an http:// or "
     "https:// URL (fetched by range requests). Lazy: the header is read now, "
     "the data when observed, and only the boxes the observation needs (x[{1, {1, 10}}] reads 10 "
     "elements), each rank its own; a file changed since the load is an error. opts: name (bind "
     "it in tp.env: read in parallel and stored at the next observation), dtype (cast after "
     "loading). Example: tp.load('w.npy', {name = 'w'})",
     lua::l_load},
    {"tp.save", K::Function, "io", "tp.save(x, path)",
     "Observe x and write it as a NumPy .npy file (version 1.0, C order) that np.load reads. "
     "On N ranks each rank writes the rows it holds. The file is written beside path and renamed, so path "
     "never holds half an array. Only a "
     "regular file is replaced: a link, device, FIFO or folder at path is an error.",
     lua::l_save},
    {"tp.save_env", K::Function, "io", "tp.save_env(dir)",
     "Checkpoint every named tensor: computes pending bindings, writes each as NAME.npy in a "
     "fresh folder dir/v-XXXX, then commits by renaming dir/manifest.json over the old one "
     "(creating dir). A failure at any point leaves the previous checkpoint whole and no new "
     "folder; after the commit the previous checkpoint's files are removed. A declared tensor is "
     "written dense, its declaration in the manifest. Returns the names written.",
     lua::l_save_env},
    {"tp.load_env", K::Function, "io", "tp.load_env(dir)",
     "Restore a checkpoint written by tp.save_env: binds every tensor its manifest lists "
     "(other names are kept; declared ones declared again, trusted, and kept packed) and returns their "
     "names. All or nothing: if a file is missing "
     "or disagrees with the manifest, the environment is unchanged and the error names it.",
     lua::l_load_env},
    {"tp.checkpoint", K::Function, "io", "tp.checkpoint([dir])",
     "Write the automatic checkpoint now: every named tensor, as tp.save_env does, into dir or "
     "else the directory given with --checkpoint-dir (an error when neither is given). The "
     "session remembers which file holds which tensor: after a lost MPI job, a named tensor no "
     "copy of survived is read back from the last checkpoint when it still holds that version "
     "and recomputing it from its lineage is not cheaper (docs/reliability.md). "
     "--checkpoint-every MIN writes one every MIN minutes (at the first observation past the "
     "interval). Returns the names written.",
     lua::l_checkpoint},
    {"tp.load_csv", K::Function, "io", "tp.load_csv(path [,opts])",
     "Read a CSV or TSV file as a 2-D tensor {rows, columns}; returns the tensor and the column "
     "names (a sequence: the header's, or '1', '2', ... without one). Quoted fields as RFC 4180; an "
     "empty field is NaN. opts: header (true/false; default: the first row is a header when one of "
     "its fields is not a number), delimiter (one character; default a tab for .tsv, else a comma), "
     "dtype (default f32), columns (a sequence of names or 1-based numbers: the columns to keep, in "
     "that order; the others may hold text), name (bind it in tp.env). path may be an http(s):// "
     "URL. Lazy: the call reads the text once to find its rows (checking every row's field count "
     "and the first row's values); each rank parses only the rows an observation reads, and a bad "
     "field further down is an error then, naming its line and column. "
     "Example: local x, names = tp.load_csv('iris.csv', {columns = {1, 2, 3, 4}})",
     lua::l_load_csv},
    {"tp.save_csv", K::Function, "io", "tp.save_csv(x, path [,opts])",
     "Observe a 1-D (one column) or 2-D tensor x and write it as CSV (TSV for .tsv): one row per "
     "line, numbers in the shortest form that reads back the same, bools as 1 and 0. On N ranks each "
     "rank formats the rows it holds and writes them at its offset in the file. Written beside "
     "path and renamed, so a failed save leaves the previous file intact. opts: columns (a sequence "
     "of names: the header row), delimiter.",
     lua::l_save_csv},
    {"tp.load_hdf5", K::Function, "io", "tp.load_hdf5(path, dataset [,opts])",
     "Read an HDF5 dataset (chunked or contiguous, compressed or not; integers load as i32 or i64, "
     "floats as f32 or f64, h5py bools as bool). Returns the tensor and a table of the dataset's "
     "attributes (numbers, strings, sequences of numbers). Lazy, as tp.load: only the boxes an "
     "observation needs are read, each by the rank that needs it (tp.stats().bytes_read counts "
     "them). opts: dtype (cast after loading), name (bind it in "
     "tp.env). Example: local u, attrs = tp.load_hdf5('sim.h5', '/fields/u')",
     lua::l_load_hdf5},
    {"tp.save_hdf5", K::Function, "io", "tp.save_hdf5(x, path, dataset [,opts])",
     "Observe x and write a new HDF5 file holding it as `dataset` (groups in the name are created) "
     "that h5py reads. Contiguous by default; opts.chunks (one size per dimension) makes it chunked "
     "(uncompressed). Either way every rank writes the rows it holds, in parallel. Written beside "
     "path and renamed, so "
     "a failed save leaves the previous file intact. opts: attrs (name -> number, string or "
     "sequence of numbers), chunks.",
     lua::l_save_hdf5},
    {"tp.load_zarr", K::Function, "io", "tp.load_zarr(path [,opts])",
     "Read a zarr v2 array (a folder with .zarray, or its http(s):// URL; C or F order; no compressor, zlib, "
     "gzip, zstd or "
     "blosc; dtypes <f4 <f8 <i4 <i8 |b1; missing chunks hold fill_value). Returns the tensor and a "
     "table of its .zattrs (numbers, strings, sequences of numbers). Lazy, as tp.load: each rank "
     "reads and decodes only the chunks its boxes touch, whatever the chunk grid. opts: dtype (cast after "
     "loading), name (bind it in tp.env). Example: local x, attrs = tp.load_zarr('data.zarr')",
     lua::l_load_zarr},
    {"tp.save_zarr", K::Function, "io", "tp.save_zarr(x, path [,opts])",
     "Observe x and write it as a zarr v2 array (C order) that the zarr package reads, written "
     "beside path and swapped in whole (only a missing path or an existing zarr array is replaced). "
     "On N ranks each chunk is encoded and written by a rank holding it (a chunk no rank holds whole "
     "is gathered to rank 0). "
     "opts: chunks (one size per dimension; default about 1 MiB, nested in the ranks' blocks), "
     "compressor ('zstd' "
     "default, 'zlib', 'gzip', 'blosc' (lz4 inside, byte shuffle), 'none'), level, attrs (name -> "
     "number, string or sequence of numbers).",
     lua::l_save_zarr},
    {"tp.load_sql", K::Function, "io", "tp.load_sql(db, query [,opts])",
     "Run one reading SQL statement on the SQLite database file db (or the PostgreSQL database of a "
     "postgresql:// URL, inside a READ ONLY transaction); returns a 2-D tensor {rows, "
     "numeric columns}, the names of those columns (a sequence, as the query names them) and the "
     "names of the columns left out because they hold text or blobs. A column is numeric when every "
     "value is an INTEGER, a REAL or NULL (NaN). The query runs at the call, on rank 0 (its result "
     "is that moment's; see docs/io.md). opts: dtype (default f32; NULL is an error for "
     "i32, i64 and bool), name (bind it in tp.env). "
     "Example: local x, names = tp.load_sql('runs.db', 'SELECT step, loss FROM log')",
     lua::l_load_sql},
    {"tp.save_sql", K::Function, "io", "tp.save_sql(x, db, table [,opts])",
     "Observe a 1-D (one column) or 2-D tensor x and write it as the table `table` of the SQLite "
     "database file db (created if missing; or of a postgresql:// URL's database): REAL columns for floats "
     "(NaN as NULL), INTEGER for "
     "integers and bools. One transaction on one connection, rank 0's (the tensor is gathered to it): "
     "the table is replaced (or appended to) whole or not at all. opts: columns (a sequence of names; "
     "default c1, c2, ...), append (true: insert into the "
     "existing table, creating it if missing).",
     lua::l_save_sql},
    {"tp.load_safetensors", K::Function, "io", "tp.load_safetensors(path [,opts])",
     "Read a safetensors file or http(s):// URL (F32, F64, I32, I64, BOOL tensors; see docs/io.md). "
     "Returns a table "
     "of tensors keyed by their names in the file, and a table of the file's __metadata__ strings. "
     "Lazy, as tp.load: only the boxes an observation needs are read. opts: dtype (cast after "
     "loading), env (true: also bind each as tp.env.NAME, with every character that is not a "
     "letter, digit or _ made _, e.g. 'layer.0.weight' -> layer_0_weight). "
     "Example: local w, meta = tp.load_safetensors('model.safetensors', {env = true})",
     lua::l_load_safetensors},
    {"tp.save_safetensors", K::Function, "io", "tp.save_safetensors(tbl, path [,opts])",
     "Write a table of tensors (name -> Tensor; tp.env itself works) as a safetensors file that "
     "the safetensors library reads, tensors in name order. On N ranks each rank writes its own "
     "rows. The file is written beside path and renamed, so a failed save leaves the previous "
     "file intact. opts: metadata (a table of strings, the file's __metadata__).",
     lua::l_save_safetensors},

    // --- plans and layouts ------------------------------------------------------------
    {"tp.plan", K::Function, "plan", "tp.plan(a, b, ... [,opts])",
     "Plan without running and return a Plan: print(plan) shows one line per op (its placement, and on "
     "a mesh of named axes which index dim is split along each axis, replicated or left partial: "
     "[nodes: i, gpus: k partial sum]), then one line per kind of collective its output makes "
     "(broadcast, all-gather, all-to-all, reduce, all-reduce, reduce-scatter, point-to-point) with its "
     "bytes and alpha-beta time, and the totals, on any mesh; plan:collectives() returns those moves as "
     "{kind, op, node, ranks, bytes, time} tables; "
     "plan:blocks() lists every rank's blocks, transfers and combines; plan:cost() returns {time, "
     "bytes_moved, flops, peak_bytes, memory_penalty, estimated}, and plan:cost{exact = true} the exact "
     "simulation of every rank's program even where the plan was estimated (it lowers every block); "
     "plan:dot(path) writes Graphviz. A big "
     "graph on a "
     "big mesh (ops x ranks > 4096) is chosen and costed by estimate from sampled blocks "
     "(estimated=true) and its blocks are built only when it runs or is drawn. opts.mesh = N (or {ranks=, "
     "ranks_per_node=, "
     "flops=, memory=, bandwidth=, latency=, network_bandwidth=, network_latency=}) plans for "
     "another machine; opts.search = 'global' (the default: the optimum of per-op and per-edge "
     "costs by dynamic programming, refined by joint moves; 'anneal' is its old name), 'greedy' or "
     "{method=, steps=, budget=, seed=, exact_limit=, reassociate=}: steps joint choices costed at most "
     "(2000), budget blocks and transfers lowered at most over all the plans costed (4,000,000), "
     "exact_limit the ops x ranks past which candidates are compared by estimate (4096; 0: always, to "
     "check the estimate against plan:cost{exact = true}), reassociate = false to compute matmul chains "
     "as parenthesized (by default a chain (a@b)@c is computed in the order the cost model picks, jointly "
     "with the sharding, and print(plan) says which): budgets count work, never seconds, and nothing is "
     "random, so the same graph, mesh and options give the same plan in any process and under any "
     "load, and the plan cache keys on them.",
     lua::l_plan},
    {"tp.explain", K::Function, "plan", "tp.explain(x [,opts])",
     "Print (and return) why the plan was chosen: each op's signature, the candidate shardings "
     "tried and the best plan cost with each. Options as tp.plan.",
     lua::l_explain},
    {"tp.dot", K::Function, "plan", "tp.dot(x, path)",
     "Write the abstract expression graph of x as Graphviz.", lua::l_dot},
    {"tp.mesh", K::Function, "plan",
     "tp.mesh() / tp.mesh{nodes=, gpus=, ... [,order=] [,links=] [,flops=] [,memory=]}",
     "With a table: a modelled mesh of named axes for tp.plan(y, {mesh = tp.mesh{nodes = 16, gpus = 8}}), as "
     "JAX's Mesh: rank r has row-major coordinates over the axes, outermost first (the order given, else "
     "racks, nodes, hosts, sockets, ranks, gpus, devices, then other names alphabetically), and two ranks "
     "talk over the link of the outermost axis where they differ. Default links: 25 GB/s and 2 us along "
     "racks/nodes/hosts, 300 GB/s and 1 us along gpus/devices, 5 GB/s and 0.5 us otherwise; links = "
     "{gpus = {bandwidth=, latency=}} sets them. Without arguments: "
     "the allocation: {ranks, devices_per_rank, device, gpu, transport, device_transport, memory_per_rank "
     "(the memory budget: --memory-per-rank, by default the available memory less a margin), "
     "flops_per_rank, memory_bytes_per_s, link_bandwidth, link_latency, rates, link_rates, measured_at, "
     "machine, cpu_isa, "
     "description}. The rates are what the planner costs the running mesh with: rates is \"measured\" (this "
     "machine's sgemm and copy rates, measured on first use and cached per machine under $XDG_CACHE_HOME or "
     "~/.cache/tapestry; tapestry --calibrate measures again) or \"built-in\" (TAPESTRY_RATES=builtin: the "
     "documented defaults); link_rates is \"measured\" once tapestry --calibrate ran under mpirun -n 2; "
     "machine is the cache's key (hostname|CPU model|threads). "
     "Modelled meshes always use the defaults unless given rates. cpu_isa is the CPU kernels' vector "
     "instructions, \"avx512\" "
     "where the CPU has them, else \"avx2\" (TAPESTRY_ISA=avx2 forces AVX2). device is \"cuda\", \"cpu\" or "
     "\"sim\" (TAPESTRY_DEVICE=sim, the "
     "simulated "
     "device); gpu says which GPU, or why none is used; device_transport how slices move between the ranks' "
     "devices (\"nccl\", or \"none: ...\" through the host). TAPESTRY_RANKS=N runs N virtual ranks in one "
     "process.",
     lua::l_mesh},
    {"tp.layout_map", K::Function, "plan", "tp.layout_map(x [,opts])",
     "The shard map of x as text (what :layout prints): which rank holds which box, how many copies "
     "of each piece (replicas), and for a value still to compute from partial results how they merge. "
     "opts.mesh "
     "and opts.search as tp.plan: tp.layout_map(x:constrain(tp.split(1, 4)), {mesh = 4}).",
     lua::l_layout_map},
    {"tp.replicated", K::Function, "plan", "tp.replicated()",
     "A layout with a whole copy of the tensor on every rank: x:constrain(tp.replicated()) makes every "
     "rank compute (or receive, down a binomial tree) the whole value, so every reader finds it where it "
     "runs "
     "(data parallelism's replicated weights). A named tensor so constrained keeps its copies: :layout says "
     "\"replicated on N ranks\".",
     lua::l_replicated},
    {"tp.split", K::Function, "plan", "tp.split(d [,parts])",
     "A layout that splits dim d into parts pieces (default: one per rank).", lua::l_split},
    {"tp.grid", K::Function, "plan", "tp.grid{p1, p2, ...}",
     "A layout with p_i pieces along dim i (1 = not split).", lua::l_grid},
    {"Tensor:layout", K::Method, "plan", "x:layout()",
     "Where x lies, as a layout: a computed (stored) tensor's shards, a value whole on rank 0, else "
     "the plan's result on the current mesh. tostring gives the notation of the print footer, "
     ":tensors and :layout (\"split(1, 4)\", \"grid{2,2}\", \"whole on rank 0\"); x:constrain takes it.",
     lua::l_layout},
    {"Tensor:constrain", K::Method, "plan", "x:constrain(layout)",
     "x with its layout fixed: the planner must produce it split this way (a hint it honours). "
     "Example: y:constrain(tp.split(1)).",
     lua::l_constrain},
};

}  // namespace

std::span<const ApiEntry> io_entries() { return kEntries; }

}  // namespace tapestry::api_table
