// viz/layout.h - where the topology view draws things: one box per machine in a grid (NVSwitches on
// top - a machine's one NVSwitch node a bar over its GPU row, reached straight up from each GPU -, GPUs
// in a row by device index, PCIe switches, CPUs and NICs below them, NIC ports at the bottom), the network's switches in a band next to the machines' NIC side (leaves, then the spine);
// a machine row below the band is mirrored so that its NICs face the band. Pure logic: coordinates
// are relative to the canvas' top-left corner.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"
#include "viz/geom.h"

namespace cclab {
namespace viz {

struct MachineBox {
  int machine = 0;
  Rect rect;
  bool mirrored = false;  // NICs at the top (below the network band)
};

struct TopoLayout {
  V2 size;                          // the canvas it was made for
  std::vector<Rect> node_rect;      // per node; empty when the node is not drawn
  std::vector<MachineBox> machines;
  Rect fabric;                      // the network band (empty when there are no network switches)
};

// Lays out every node of `t` inside a canvas of `size` pixels.
TopoLayout layout_topology(const trace::Trace& t, V2 size);

// The drawn line of one direction of a link: the segment between the two node boxes' borders along the
// line joining their centres (a box at least 2.5 times as wide as the other, above or below it and
// spanning its centre, is joined straight up or down at that centre's x), moved sideways by `offset` pixels to the right of the direction of travel
// (so the two directions of a full-duplex link are two parallel lines). False when either end is not
// drawn.
struct Segment {
  V2 a, b;
};
bool link_segment(const TopoLayout& layout, const trace::Link& link, float offset, Segment* out);

// The sideways offset used for a link of thickness `thickness`: half of it plus one pixel.
float link_offset(float thickness);

// The point at fraction f (clamped to [0, 1]) of the length of a polyline (consecutive segments; gaps
// between one segment's end and the next one's start are not counted).
V2 point_along(const std::vector<Segment>& path, float f);

// Where a chunk is: the route's drawn segments (each link's own direction, as link_segment with the
// link's offset), then point_along at the fraction of [data_us, end_us] elapsed at t. False when the
// route has no drawn link.
bool chunk_position(const trace::Trace& t, const TopoLayout& layout, const trace::Event& e, double time_us, V2* out);

// Positions of n ranks on a circle (first at the top, clockwise) in the rectangle.
std::vector<V2> ring_positions(int n, const Rect& r);
// Positions of the ranks of a tree (parent per rank, -1 at a root): depth rows top to bottom, leaves
// spread evenly left to right, parents centred over their children. Ranks not in the tree (parent of
// themselves, out of range) are put in a last row.
std::vector<V2> tree_positions(const std::vector<int>& parent, const Rect& r);

}  // namespace viz
}  // namespace cclab
