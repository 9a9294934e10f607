function [R, g, data, risktim] = risk_timed(data, W)
%RISK_TIMED l1risk in the flandmark/clandmark style: a fourth output with
% the risk's timings (the toolbox's risktim struct).
t = tic;
if nargin < 2
  [R, g, data] = l1risk(data);
else
  [R, g, data] = l1risk(data, W);
end
risktim = struct('r', toc(t), 'subgrad', 0);
end
