% Input validation through the MEX gateway: every case is
% an error with an identifier and a message naming what is wrong; nothing is
% truncated or silently accepted. Run from run_tests.m.
data = struct('c', [1; -2; 3], 'calls', 0);
risk = @(d, varargin) first_then(d, @() deal(sum(abs(varargin{1} - d.c)), sign(varargin{1} - d.c), d), varargin{:});
[W, s] = bmrm(data, risk, 1);
check(any(s.exitflag == [1 2]) && numel(W) == 3, 'the validation problem solves (exit %s)', s.exit);
% BufSize NaN (and other non-positive sizes) rejected, not turned into 2 planes.
expect_error(@() bmrm(data, risk, 1, struct('BufSize', NaN)), 'bmrm:badArgument', 'BufSize');
expect_error(@() bmrm(data, risk, 1, struct('BufSize', -1)), 'bmrm:badArgument', 'BufSize');
expect_error(@() bmrm(data, risk, 1, struct('BufSizeCP', 2.5)), 'bmrm:badArgument', 'BufSizeCP');
% Counts beyond their C type are rejected with their value, not truncated.
param = mc_param(randn(4, 12), mod(0:11, 3)' + 1, 3);
base = struct('dim', 12, 'lambda', 0.1);
expect_error(@() bmrm_mex('bcfw', param, setfield(base, 'cache_size', 2^32)), 'bmrm:badArgument', ...
             'cache_size = 4294967296 is above its largest value 4294967295');
expect_error(@() bmrm_mex('bcfw', param, setfield(base, 'gap_check', 2^32)), 'bmrm:badArgument', ...
             'gap_check = 4294967296 is above its largest value 4294967295');
expect_error(@() bmrm_mex('bcfw', param, setfield(base, 'sampling', 1e20)), 'bmrm:badArgument', ...
             'sampling must be an integer from 0 to');
expect_error(@() bmrm_mex('bcfw', param, setfield(base, 'step_type', -1)), 'bmrm:badArgument', ...
             'step_type must be an integer from 0 to');
expect_error(@() bmrm_mex('bcfw', param, setfield(base, 'seed', 2^64)), 'bmrm:badArgument', ...
             'seed = 1.8446744073709552e+19 is above');
expect_error(@() bmrm_mex('bcfw', param, setfield(base, 'num_passes', 1.5)), 'bmrm:badArgument', ...
             'num_passes must be a non-negative integer');
expect_error(@() bcfw(param, struct('maxCacheSize', 2^32)), 'bmrm:badArgument', 'cache_size = 4294967296');
expect_error(@() bcfw(param, struct('gap_check', 2^32)), 'bmrm:badArgument', 'gap_check = 4294967296');
% A subgradient that is 3-D, at the probe or later, or changes size.
expect_error(@() bmrm(data, @(d, varargin) deal(1, zeros(1, 1, 3), d), 1), 'bmrm:badOutput', '[1 1 3]');
expect_error(@() bmrm(data, @(d, varargin) first_then(d, @() deal(1, zeros(1, 1, 3), d), varargin{:}), 1), ...
             'bmrm:badOutput', '3-D array');
expect_error(@() bmrm(data, @(d, varargin) first_then(d, @() deal(1, zeros(4, 1), d), varargin{:}), 1), ...
             'bmrm:badOutput', 'vector of 3 elements, not 4x1');
% An error with an empty message is still an error, with a message.
empty = struct('message', '', 'identifier', '', 'stack', struct('file', {}, 'name', {}, 'line', {}, 'column', {}));
expect_error(@() bmrm(data, @(d, varargin) first_then(d, @() rethrow(empty), varargin{:}), 1), ...
             'bmrm:callbackError', 'an error without a message');
% A dimension that cannot be allocated: an error with an identifier.
expect_error(@() bmrm(data, @(d, varargin) deal(1, sparse(1e15, 1), d), 1), 'bmrm:outOfMemory', 'allocate');
expect_error(@() bmrm_mex('bmrm', data, risk, 1, struct('dim', 1e15)), 'bmrm:outOfMemory', 'allocate');
expect_error(@() bmrm_mex('bmrm', data, risk, 1, struct('dim', 1e300)), 'bmrm:badArgument', 'dimension');
[W, s] = bmrm(data, risk, 1);
check(any(s.exitflag == [1 2]), 'a solve after the validation errors (exit %s)', s.exit);
