function [R, g, data] = l1risk(data, W)
%L1RISK R(W) = sum_j |W_j - c_j| (toolbox convention; the optimum of
% 0.5*lambda*||W||^2 + R is clip(c, -1/lambda, 1/lambda)). Counts its calls in
% data.calls and, for calls without W, in the global l1_probes.
global l1_probes
if nargin < 2
  W = zeros(numel(data.c), 1);
  if isempty(l1_probes), l1_probes = 0; end
  l1_probes = l1_probes + 1;
end
d = W - data.c;
R = sum(abs(d));
g = sign(d);
g(g == 0) = -1;
data.calls = data.calls + 1;
if isfield(data, 'fail_at') && data.calls == data.fail_at
  error('test:userError', 'the user''s own failure at call %d', data.calls);
end
if isfield(data, 'nan_at') && data.calls == data.nan_at
  g(2) = NaN;
end
if isfield(data, 'interrupt_at') && data.calls == data.interrupt_at
  kill(getpid(), 2);       % what Ctrl-C does
  t = tic;                 % Octave's signal thread sets the interrupt flag
  while toc(t) < 10        % soon; the interrupt then lands in this loop
  end
end
end
