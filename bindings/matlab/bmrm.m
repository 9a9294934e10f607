function [W, stat] = bmrm(data, risk, lambda, options)
%BMRM Bundle methods for regularized risk minimization (the bmrm library).
%
% Synopsis:
%   [W, stat] = bmrm(data, risk, lambda)
%   [W, stat] = bmrm(data, risk, lambda, options)
%
% Minimizes
%
%   F(W) = 0.5*lambda*W'*W + R(data, W)
%
% in the calling convention of the MATLAB BMRM toolbox (V. Franc): risk is a
% handle of a function
%
%   [R, subgrad, data] = risk(data, W)     (or [R, subgrad] = risk(data, W))
%
% returning the risk and one subgradient (a full or sparse vector) at W; it
% is called once as risk(data) to learn the dimension (W = 0). The data it
% returns is passed to its next call.
%
% When data is a cell array of P blocks, risk(data{p}, W) is the p-th
% partial risk, R = sum_p R_p, and the P-BMRM algorithms keep one
% cutting-plane model per block (as the toolbox's parallel variant did).
%
% options (a struct; every field optional):
%   .TolRel     relative tolerance (default 1e-3): stop when Fp-Fd <= TolRel*|Fp|
%   .TolAbs     absolute tolerance (default 0): stop when Fp-Fd <= TolAbs
%   .MaxIter    most iterations (default inf)
%   .TimeLimit  most seconds (default inf)
%   .verb       print progress every verb iterations (default 0: silent)
%   .BufSize    cutting-plane buffer in MB (default 100, the toolbox's rule
%               converts it into a number of planes); .BufSizeCP gives the
%               number of planes directly. A full buffer never stops the
%               solver: inactive planes are dropped, the rest aggregated.
%   .CleanBuffer  remove planes inactive for this many iterations
%               (default 10; inf = never); the toolbox's .CleanICP (true:
%               remove those inactive for .CleanAfter, default 10,
%               iterations; false: never) is the same
%   .MaxMemory  parbmrm's: only inf (no cap) is supported
%   .Algorithm  'bmrm' (default), 'proxbmrm', 'pbmrm', 'proxpbmrm' (both
%               need data as a cell array of blocks), 'cp' (cutting plane)
%   .W0         start vector (default zeros); clandmark's .initW and
%               pp_bmrm's .W are the same (give one)
%   .K, .Tmax   the proximal methods' step bound and T (defaults: automatic, 100)
%   .NumThreads threads for the solver's own work (default 0: all cores);
%               the risk is always called on MATLAB's thread
%
% Outputs:
%   W     [nDim x 1] the best point found (its objective is stat.Fp)
%   stat  .Fp primal value F(W); .Fd a lower bound of min F (Fd <= F(W*) <= Fp)
%         .nIter iterations; .exitflag 1 (TolRel), 2 (TolAbs), 0 (MaxIter),
%         3 (TimeLimit); .hist.Fp, .hist.Fd, .hist.R, .hist.runtime per
%         iteration (best Fp and Fd so far, R at the iterate, wall seconds);
%         also .exit (text), .nCP, .nzA, .runtime, .oracle_calls, and
%         .certified (logical: true when the gap certifies; always for a
%         risk, see docs/reliability.md for max-oracles)
%
% Errors (all are MATLAB errors, the session goes on): an error in risk
% ('bmrm:callbackError', with the risk's own message), a NaN or Inf in its
% outputs ('bmrm:nonFinite'), malformed outputs ('bmrm:badOutput'), bad
% arguments ('bmrm:badArgument'), Ctrl-C ('bmrm:interrupted': the solve
% stops cleanly).
%
% Build the MEX gateway first: build_mex (see build_mex.m).

if nargin < 3
  error('bmrm:badArgument', 'bmrm: usage [W, stat] = bmrm(data, risk, lambda, options)');
end
if nargin < 4 || isempty(options)
  options = struct();
end
if ~isstruct(options) || numel(options) ~= 1
  error('bmrm:badArgument', 'bmrm: options must be a struct');
end
if ~isa(risk, 'function_handle')
  error('bmrm:badArgument', 'bmrm: risk must be a function handle, not a %s', class(risk));
end
if ~isnumeric(lambda) || ~isscalar(lambda) || ~isreal(lambda) || ~(lambda > 0) || ~isfinite(lambda)
  error('bmrm:badArgument', 'bmrm: lambda must be a positive finite scalar');
end

known = {'TolRel', 'TolAbs', 'MaxIter', 'TimeLimit', 'verb', 'BufSize', 'BufSizeCP', ...
         'CleanBuffer', 'Algorithm', 'W0', 'K', 'Tmax', 'NumThreads', ...
         'initW', 'W', 'CleanICP', 'CleanAfter', 'MaxMemory'};
names = fieldnames(options);
for k = 1:numel(names)
  if ~any(strcmp(names{k}, known))
    error('bmrm:badArgument', 'bmrm: unknown option ''%s'' (known: %s)', names{k}, ...
          strjoin(known, ', '));
  end
end
opt = @(name, default) option(options, name, default);
% The flandmark/clandmark toolbox names: the start point is clandmark's
% initW or pp_bmrm's W; CleanICP/CleanAfter remove planes inactive for
% CleanAfter iterations (CleanICP false: never).
starts = {'W0', 'initW', 'W'};
given = starts(cellfun(@(f) isfield(options, f) && ~isempty(options.(f)), starts));
if numel(given) > 1
  error('bmrm:badArgument', 'bmrm: give one start point, not %s', strjoin(given, ' and '));
elseif numel(given) == 1
  options.W0 = options.(given{1});
end
if isfield(options, 'CleanICP') && ~isempty(options.CleanICP)
  if isfield(options, 'CleanBuffer') && ~isempty(options.CleanBuffer)
    error('bmrm:badArgument', 'bmrm: give CleanICP/CleanAfter or CleanBuffer, not both');
  end
  if logical(options.CleanICP)
    options.CleanBuffer = opt('CleanAfter', 10);
  else
    options.CleanBuffer = inf;
  end
elseif isfield(options, 'CleanAfter') && ~isempty(options.CleanAfter)
  error('bmrm:badArgument', 'bmrm: options.CleanAfter needs options.CleanICP = true');
end
if isfield(options, 'MaxMemory') && ~isempty(options.MaxMemory) && isfinite(options.MaxMemory)
  error('bmrm:unsupported', 'bmrm: options.MaxMemory (a finite memory cap) is not supported by bmrm');
end
opt = @(name, default) option(options, name, default);

algorithm = lower(opt('Algorithm', 'bmrm'));
if ~ischar(algorithm) || ~any(strcmp(algorithm, {'bmrm', 'proxbmrm', 'pbmrm', 'proxpbmrm', 'cp'}))
  error('bmrm:badArgument', ...
        'bmrm: options.Algorithm must be ''bmrm'', ''proxbmrm'', ''pbmrm'', ''proxpbmrm'' or ''cp''');
end
parts = iscell(data);
if any(strcmp(algorithm, {'pbmrm', 'proxpbmrm'})) && ~parts
  error('bmrm:badArgument', ['bmrm: Algorithm ''%s'' keeps one cutting-plane model per ' ...
        'block: give data as a cell array of P blocks, risk(data{p}, W) the p-th partial risk'], ...
        algorithm);
end
if parts && isempty(data)
  error('bmrm:badArgument', 'bmrm: data is an empty cell array');
end

% The dimension: risk(data) at W = 0 (data{1} for blocks), and how many
% outputs the risk gives.
if parts
  first = data{1};
else
  first = data;
end
[nout, subgrad, first] = probe(risk, first);
if parts
  data{1} = first;
else
  data = first;
end
if ndims(subgrad) ~= 2 || (~isvector(subgrad) && ~isempty(subgrad))
  error('bmrm:badOutput', 'bmrm: risk(data) must return a vector subgradient, not a %s array', ...
        mat2str(size(subgrad)));
end
dim = numel(subgrad);
if dim < 1
  error('bmrm:badOutput', 'bmrm: risk(data) returned an empty subgradient');
end

% The toolbox's BufSize (MB) -> planes.
bufsize_mb = opt('BufSize', 100);
if ~isnumeric(bufsize_mb) || ~isscalar(bufsize_mb) || ~isreal(bufsize_mb) || ~(bufsize_mb > 0) || ~isfinite(bufsize_mb)
  error('bmrm:badArgument', 'bmrm: options.BufSize must be a positive finite number of MB');
end
bufsize_cp = opt('BufSizeCP', 0);
if ~isnumeric(bufsize_cp) || ~isscalar(bufsize_cp) || ~isreal(bufsize_cp) || ~(bufsize_cp >= 0) || ...
   ~isfinite(bufsize_cp) || bufsize_cp ~= round(bufsize_cp)
  error('bmrm:badArgument', 'bmrm: options.BufSizeCP must be a non-negative integer');
end
planes = round((-dim*8 + sqrt((dim*8)^2 + 4*8*1024^2*bufsize_mb)) / 16);
planes = max(planes, bufsize_cp);
planes = max(planes, 2);

w0 = opt('W0', []);
if ~isempty(w0)
  if ~isnumeric(w0) || ~isreal(w0) || numel(w0) ~= dim
    error('bmrm:badArgument', 'bmrm: options.W0 must be a real vector of %d elements', dim);
  end
  w0 = full(double(w0(:)));
end

o = struct();
o.algorithm = algorithm;
o.dim = dim;
o.nout = nout;
o.tol_rel = opt('TolRel', 1e-3);
o.tol_abs = opt('TolAbs', 0);
o.max_iterations = opt('MaxIter', inf);
o.time_limit = opt('TimeLimit', inf);
o.verb = opt('verb', 0);
o.buffer_size = planes;
o.clean_after = opt('CleanBuffer', 10);
o.prox_k = opt('K', 0);
o.prox_t = opt('Tmax', 100);
o.num_threads = opt('NumThreads', 0);
if parts && any(strcmp(algorithm, {'pbmrm', 'proxpbmrm'}))
  o.num_parts = numel(data);
end
o.W0 = w0;
check_scalars(o, {'tol_rel', 'tol_abs', 'max_iterations', 'time_limit', 'verb', ...
                  'clean_after', 'prox_k', 'prox_t', 'num_threads'});

try
  [W, stat] = bmrm_mex('bmrm', data, risk, double(lambda), o);
catch err
  rethrow_mex(err);
end
end

function check_scalars(o, names)
for k = 1:numel(names)
  v = o.(names{k});
  if ~(isnumeric(v) || islogical(v)) || ~isscalar(v) || ~isreal(v) || isnan(v) || v < 0
    error('bmrm:badArgument', 'bmrm: the option behind %s must be a non-negative real scalar', ...
          names{k});
  end
end
end

function [nout, subgrad, data] = probe(risk, data)
% risk(data) with 3 outputs when the function has them, else 2; the data it
% returns (the toolbox's convention) is the data of the next call.
n = nargout(risk);
if n >= 3 || n < 0
  try
    [R, subgrad, data] = risk(data); %#ok<ASGLU>
    nout = 3;
    return;
  catch err
    if n >= 3
      rethrow(err);
    end
    % A handle that may return fewer outputs (an anonymous function or
    % varargout): try 2; if that fails too, report the first error.
    try
      [R, subgrad] = risk(data); %#ok<ASGLU>
      nout = 2;
      return;
    catch
      rethrow(err);
    end
  end
end
if n < 2
  error('bmrm:badArgument', 'bmrm: risk must return [R, subgrad] or [R, subgrad, data]');
end
[R, subgrad] = risk(data); %#ok<ASGLU>
nout = 2;
end
