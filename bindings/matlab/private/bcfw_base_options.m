function o = bcfw_base_options(who, param, options, hash_args)
%BCFW_BASE_OPTIONS The gateway options that gapBCFW's and BCFWstruct's
% front ends share: dim, lambda (1/n by default), the gap threshold as an
% absolute tolerance, num_passes and time_budget (minutes).
opt = @(name, default) option(options, name, default);
o = struct('dim', bcfw_dim(who, param), 'algorithm', 'bcfw', 'hash_args', hash_args);
o.lambda = opt('lambda', 1 / numel(param.patterns));
o.tol_rel = 0;
o.tol_abs = opt('gap_threshold', 0.1);
o.num_passes = opt('num_passes', 200);
o.time_limit = 60 * opt('time_budget', inf);
end
