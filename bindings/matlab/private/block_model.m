function model = block_model(model, state, lambda, n)
%BLOCK_MODEL gapBCFW's model.wMat (one w_i per example) and model.ellMat
% from a saved dual state: w_i = sum_y alpha_i(y) psi_i(y) / (lambda n),
% ell_i = sum_y alpha_i(y) L_i(y) / n; model.v = sum_i w_i (untruncated w).
counts = state.num_corners(:);
block = repelem((1:n)', counts);
A = sparse(1:numel(block), block, state.alpha, numel(block), n);
model.wMat = state.psi * A / (lambda * n);
model.ellMat = full(A' * state.loss) / n;
model.v = full(sum(model.wMat, 2));
end
