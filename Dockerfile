FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY lakeledger ./lakeledger
COPY domain ./domain
COPY eventstore ./eventstore
COPY projections ./projections
COPY services ./services
COPY storage ./storage
COPY api ./api
COPY workers ./workers
COPY migrations ./migrations
COPY sinks ./sinks
COPY secretstore ./secretstore
COPY identity ./identity
COPY authz ./authz
RUN pip install --no-cache-dir .
ENV LAKELEDGER__LISTEN_PORT=8181
EXPOSE 8181
ENTRYPOINT ["lakeledger"]
CMD ["serve"]
