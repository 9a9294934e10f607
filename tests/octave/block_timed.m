function [R, g, block, risktim] = block_timed(block, W)
%BLOCK_TIMED l1block with the toolbox's fourth output (timings).
t = tic;
if nargin < 2
  [R, g, block] = l1block(block);
else
  [R, g, block] = l1block(block, W);
end
risktim = struct('r', toc(t), 'subgrad', 0);
end
