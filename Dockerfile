# clinbench serve in a container: a task served over OpenEnv's WebSocket protocol.
#   docker build -t clinbench-serve .
#   docker run --rm -p 7860:7860 clinbench-serve                                  # recruitment/hard_bench
#   docker run --rm -p 7860:7860 clinbench-serve --task trial_design/effective_drug --max-sessions 32
# Arguments after the image name go to `clinbench serve` (docs/serving.md). CI lints
# this file with hadolint (tests/test_dockerfile.py); no CI machine runs a docker engine.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/clinbench
# what the package is built from, nothing else (no results, tests or data)
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY clinbench ./clinbench
# the pinned stack and the serve extra (openenv-core); not editable: the source folder
# is removed once the wheel is installed
RUN pip install --no-cache-dir -c constraints.txt ".[serve]" \
    && rm -rf /opt/clinbench/clinbench \
    && groupadd --gid 10001 clinbench \
    && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin clinbench

# a numeric user, not root: the host resolves it whatever its /etc/passwd
USER 10001:10001
WORKDIR /home/clinbench
EXPOSE 7860
# /health answers 200 once the app is up (python's urllib: no curl in the slim image)
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/health', timeout=4)"]
# every interface of the container (the server warns: it has no authentication); the
# port is fixed so that the health check and EXPOSE agree: map it with -p HOST:7860
ENTRYPOINT ["clinbench", "serve", "--host", "0.0.0.0", "--port", "7860"]
CMD ["--task", "recruitment/hard_bench"]
