function [R, g] = two_outputs(data, W)
%TWO_OUTPUTS l1risk without the data output.
if nargin < 2
  [R, g] = l1risk(data);
else
  [R, g] = l1risk(data, W);
end
end
