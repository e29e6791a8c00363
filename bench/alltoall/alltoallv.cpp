// The peer of bench/alltoall/alltoall.lua: the same redistribution with MPI's own MPI_Alltoallv.
//   mpirun -n 8 bench_alltoall [n] [kind]   (default n = 4096: a 64 MiB f32 matrix)
// kind: a2a (the default, below), bcast (MPI_Bcast of the n x n matrix from rank 0: n = 512 is
// 1 MiB, 4096 64 MiB), allgather (MPI_Allgatherv of the matrix split by rows). Each prints the
// median of 7 runs after a warm-up.
// A n x n f32 matrix split by rows becomes split by columns: each rank packs the columns of its
// rows that every other rank owns (as Tapestry's sends pack strided slices), exchanges them with
// one MPI_Alltoallv, and unpacks what it receives into its column block. Prints the median of 7
// runs after a warm-up, as `RESULT A2A mpi_alltoallv <seconds>`.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const long n = argc > 1 ? std::atol(argv[1]) : 4096;
  const std::string kind = argc > 2 ? argv[2] : "a2a";
  if (kind == "bcast" || kind == "allgather") {
    std::vector<float> all(static_cast<size_t>(n * n), 1.0f);
    std::vector<int> count(p), disp(p);
    for (int r = 0; r < p; ++r) {
      const long rows = (r + 1) * n / p - r * n / p;
      count[r] = static_cast<int>(rows * n), disp[r] = static_cast<int>(r * n / p * n);
    }
    std::vector<double> times;
    for (int rep = 0; rep <= 7; ++rep) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (kind == "bcast") MPI_Bcast(all.data(), static_cast<int>(n * n), MPI_FLOAT, 0, MPI_COMM_WORLD);
      else
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, all.data(), count.data(), disp.data(), MPI_FLOAT,
                       MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      if (rep > 0) times.push_back(MPI_Wtime() - t0);
    }
    std::sort(times.begin(), times.end());
    if (me == 0)
      std::printf("RESULT %s mpi_%s %.6g n=%ld ranks=%d MiB=%.1f\n", kind == "bcast" ? "BCAST" : "ALLGATHER",
                  kind == "bcast" ? "bcast" : "allgatherv", times[times.size() / 2], n, p,
                  4.0 * n * n / (1 << 20));
    MPI_Finalize();
    return 0;
  }
  auto lo = [&](int r) { return r * n / p; };  // rows (and columns) of rank r: [lo(r), lo(r+1))
  const long my_rows = lo(me + 1) - lo(me), my_cols = my_rows;
  std::vector<float> rows(static_cast<size_t>(my_rows * n)), cols(static_cast<size_t>(n * my_cols));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i % 1000);
  std::vector<float> sendbuf(rows.size()), recvbuf(cols.size());
  std::vector<int> scount(p), sdisp(p), rcount(p), rdisp(p);
  for (int r = 0, s = 0, t = 0; r < p; ++r) {
    scount[r] = static_cast<int>(my_rows * (lo(r + 1) - lo(r)));  // my rows x r's columns
    rcount[r] = static_cast<int>((lo(r + 1) - lo(r)) * my_cols);  // r's rows x my columns
    sdisp[r] = s, rdisp[r] = t;
    s += scount[r], t += rcount[r];
  }
  std::vector<double> times;
  for (int rep = 0; rep <= 7; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int r = 0; r < p; ++r)  // pack: for each destination, my rows x its columns
      for (long i = 0; i < my_rows; ++i)
        std::copy_n(&rows[static_cast<size_t>(i * n + lo(r))], lo(r + 1) - lo(r),
                    &sendbuf[static_cast<size_t>(sdisp[r] + i * (lo(r + 1) - lo(r)))]);
    MPI_Alltoallv(sendbuf.data(), scount.data(), sdisp.data(), MPI_FLOAT, recvbuf.data(), rcount.data(),
                  rdisp.data(), MPI_FLOAT, MPI_COMM_WORLD);
    for (int r = 0; r < p; ++r)  // unpack: r's rows of my columns
      std::copy_n(&recvbuf[static_cast<size_t>(rdisp[r])], rcount[r],
                  &cols[static_cast<size_t>(lo(r) * my_cols)]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rep > 0) times.push_back(MPI_Wtime() - t0);
  }
  std::sort(times.begin(), times.end());
  if (me == 0)
    std::printf("RESULT A2A mpi_alltoallv %.6g n=%ld ranks=%d MiB=%.1f\n", times[times.size() / 2], n, p,
                4.0 * n * n * (p - 1) / p / (1 << 20));
  MPI_Finalize();
  return 0;
}
