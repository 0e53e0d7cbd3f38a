// Text forms of the locality table for cgdr-info and logs.
#pragma once
#include <string>

#include "topo/detect.hpp"

namespace cgdr::topo {

// This rank's identity, several lines each prefixed "rank N: ".
std::string describeIdentity(const IdentityRecord& r);
// One line per peer with every capability and reason; also a machine-readable "pair" line.
std::string describePeers(const LocalityTable& t);
// One letter per peer for the relation matrix (upper case: served by the engine).
std::string relationRow(const LocalityTable& t);

}  // namespace cgdr::topo
