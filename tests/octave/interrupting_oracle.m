function yhat = interrupting_oracle(param, model, x, y, oracle)
%INTERRUPTING_ORACLE oracle(...), sending this process SIGINT (what Ctrl-C
% does) at the 50th call and waiting for the interrupt to land.
global oracle_calls
oracle_calls = oracle_calls + 1;
if oracle_calls == 50
  kill(getpid(), 2);
  t = tic;
  while toc(t) < 10
  end
end
yhat = oracle(param, model, x, y);
end
