function h = hinge(param, model, i)
%HINGE The structured hinge loss of example i at model.w (one oracle call).
x = param.patterns{i};
y = param.labels{i};
ys = param.oracleFn(param, model, x, y);
psi = param.featureFn(param, x, y) - param.featureFn(param, x, ys);
h = param.lossFn(param, y, ys) - model.w' * psi(:);
end
