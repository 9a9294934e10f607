function [R, g, data] = counting_risk(data, W)
%COUNTING_RISK l1risk, recording in the global data_seen how many calls the
% data it was given has seen (the data must be threaded through the calls).
global data_seen
if nargin < 2
  [R, g, data] = l1risk(data);
else
  [R, g, data] = l1risk(data, W);
end
data_seen = data.calls;
end
