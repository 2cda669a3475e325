#pragma once
// How the mpi transport uses MPI tags and the wire header.
//
// Every message is a 40-byte wire header (wire/header.hpp) sent with MPI_Isend to the receiving
// rank under the header tag of the destination application, followed, when it has a payload, by
// the payload sent with MPI_Issend under the payload tag of the (source, destination) pair. The
// receiver pre-posts header receives from any rank; a header tells it the size, and it posts the
// payload receive into a pool buffer of its own from exactly that rank. Per rank and tag MPI does
// not reorder, so the k-th payload of a pair always meets the receive posted for its k-th header.
//
// Control messages are headers without payload: hello (tag kHello or kWelcome) and bye (tag kBye
// or kAbort). Headers of empty messages go with MPI_Issend so that they, too, complete only once
// the receiver has taken them.

#include <bit>
#include <cstdint>

namespace daqflow::transport::mpi {

inline constexpr std::uint64_t kHello = 0;    // hello: please open; answer with kWelcome
inline constexpr std::uint64_t kWelcome = 1;  // hello: opened
inline constexpr std::uint64_t kBye = 0;      // bye: orderly close after everything sent
inline constexpr std::uint64_t kAbort = 1;    // bye: fault injection's simulated crash

// Tags for a cluster of `applications` applications: header tags are the destination index,
// payload tags set one bit above source and destination.
class Tags {
 public:
  explicit Tags(std::uint32_t applications)
      : bits_(applications <= 1 ? 1 : std::bit_width(applications - 1)) {}
  [[nodiscard]] int header(std::uint32_t destination) const {
    return static_cast<int>(destination);
  }
  [[nodiscard]] int payload(std::uint32_t source, std::uint32_t destination) const {
    return static_cast<int>((std::uint64_t{1} << (2 * bits_)) | (std::uint64_t{source} << bits_) |
                            destination);
  }
  // The largest tag used; must not exceed MPI_TAG_UB.
  [[nodiscard]] std::uint64_t largest() const { return (std::uint64_t{1} << (2 * bits_ + 1)) - 1; }

 private:
  unsigned bits_;
};

}  // namespace daqflow::transport::mpi
