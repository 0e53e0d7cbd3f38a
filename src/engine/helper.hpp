// While a rank is blocked inside the real MPI (a blocking collective, say) with engine operations
// pending, a helper thread keeps its shared-memory engine progressing: co-located peers get their
// rendezvous answers, data records and chunk releases. The helper never calls the real MPI, and
// it sleeps when nobody is blocked. (Turning the blocking call into a non-blocking one instead
// would be wrong for collectives: MPI never matches the two forms with each other.)
#pragma once

namespace cgdr::engine {

class BlockingScope {
 public:
  BlockingScope();
  ~BlockingScope();
  BlockingScope(const BlockingScope&) = delete;
  BlockingScope& operator=(const BlockingScope&) = delete;

 private:
  bool active_ = false;
};

// Stops the helper thread (MPI_Finalize).
void stopHelper();

}  // namespace cgdr::engine
