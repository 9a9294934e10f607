function [R, g, data] = first_then(data, f, varargin)
%FIRST_THEN l1risk for the probe risk(data), then whatever f() returns.
if isempty(varargin)
  [R, g, data] = l1risk(data);
else
  [R, g, data] = f();
end
end
