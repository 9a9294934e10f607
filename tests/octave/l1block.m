function [R, g, block] = l1block(block, W)
%L1BLOCK The block of coordinate block.j of l1risk: |W_j - c_j|, with a
% sparse subgradient.
if nargin < 2
  W = zeros(block.dim, 1);
end
d = W(block.j) - block.c;
R = abs(d);
g = sparse(block.j, 1, sign(d) + (d == 0) * -1, block.dim, 1);
block.calls = block.calls + 1;
end
