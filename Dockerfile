FROM python:3.11-slim
WORKDIR /app
# The whole package is one folder: what pyproject.toml packages is what the image installs (tests/unit/test_image.py)
COPY pyproject.toml README.md ./
COPY lakeledger ./lakeledger
RUN pip install --no-cache-dir .
ENV LAKELEDGER__LISTEN_PORT=8181
EXPOSE 8181
ENTRYPOINT ["lakeledger"]
CMD ["serve"]
